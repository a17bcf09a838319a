//! The lab's per-request context: where the request sits in its call tree
//! (the trace) and when its caller stops waiting (the deadline).
//!
//! The server layer's observer opens a [`RequestContext`] for every inbound
//! request and hands it to the handler in the request's extensions; the
//! handler passes it on to its work and its calls (the trace to write, the
//! deadline to keep), a copy of a few words, with no task-local to swap in
//! and out on every poll. The record of outbound outcomes, from which the
//! claim is decided, is `tower-error-ownership`'s
//! ([`tower_error_ownership::record`]), the one task-local of a request.
//!
//! A service that *loses its context* — spawns its outbound work on a task
//! that does not carry it, as real services do when they forget to
//! propagate it — makes its calls outside the record. Its analysis then sees
//! no outbound failure and it claims its own error (rule 4). The fleet
//! simulates exactly that: it runs a dropped-context service's calls on a
//! freshly spawned task, which carries no record, and without the
//! request's deadline.

use std::time::Duration;

use tokio::time::Instant;

/// Header carrying the trace down the call tree: the root request's id and
/// the hop depth (the entry is 0), as `<root>-<depth>`, e.g. `8812-3`. One
/// header rather than two: every extra header costs an allocation on both
/// sides of every hop.
pub const TRACE_HEADER: &str = "x-chaoslab-trace";

/// [`TRACE_HEADER`] as a ready header name (no parsing per request).
pub static TRACE: http::HeaderName = http::HeaderName::from_static(TRACE_HEADER);

pub use crate::observe::Trace;

/// Header carrying a call's deadline under `deadline: propagate`: the time,
/// in whole milliseconds, its caller will still wait for the answer, in the
/// spirit of gRPC's `grpc-timeout`. A time left rather than an instant, so
/// the two ends need no common clock; what the request spends on the wire
/// only makes the callee's deadline a little earlier than its caller's.
pub const DEADLINE_HEADER: &str = "x-chaoslab-deadline";

/// [`DEADLINE_HEADER`] as a ready header name.
pub static DEADLINE: http::HeaderName = http::HeaderName::from_static(DEADLINE_HEADER);

/// Reads the deadline header: the time the caller has left. A missing
/// header, or anything but plain decimal milliseconds (a sign, a unit,
/// garbage), reads as no deadline: a peer's bad header never fails a
/// request, it only loses the deadline.
pub fn deadline_from_headers(headers: &http::HeaderMap) -> Option<Duration> {
    deadline_from_value(headers.get(&DEADLINE)?)
}

/// Reads a deadline header's value, as [`deadline_from_headers`] does.
pub fn deadline_from_value(v: &http::HeaderValue) -> Option<Duration> {
    let v = v.as_bytes().trim_ascii();
    if v.is_empty() || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    // Digits only: the one failure left is overflow.
    let ms: u64 = std::str::from_utf8(v).ok()?.parse().ok()?;
    Some(Duration::from_millis(ms))
}

/// The lab's headers on an inbound request: its trace and its deadline,
/// the first value of each (as `HeaderMap::get` reads them).
#[derive(Debug, Clone, Copy, Default)]
pub struct Carried<'a> {
    /// The trace header's value.
    pub trace: Option<&'a http::HeaderValue>,
    /// The deadline header's value.
    pub deadline: Option<&'a http::HeaderValue>,
}

/// Up to this many headers, [`Carried::of`] reads a request's headers in
/// one pass, comparing names, rather than hashing each name it looks up.
const SCANNED: usize = 12;

impl<'a> Carried<'a> {
    /// Both headers of `headers`, read on every hop: over a request's
    /// few headers one pass comparing names costs less than the two
    /// look-ups, each of which hashes its name.
    pub fn of(headers: &'a http::HeaderMap) -> Carried<'a> {
        if headers.len() > SCANNED {
            return Carried {
                trace: headers.get(&TRACE),
                deadline: headers.get(&DEADLINE),
            };
        }
        let mut c = Carried::default();
        for (name, value) in headers {
            if *name == TRACE {
                c.trace.get_or_insert(value);
            } else if *name == DEADLINE {
                c.deadline.get_or_insert(value);
            }
        }
        c
    }
}

/// The deadline header's value for `left`, rounded down to the
/// millisecond, so the callee's deadline never falls after its caller's.
pub fn deadline_header_value(left: Duration) -> http::HeaderValue {
    let mut v = http::HeaderValue::from(u64::try_from(left.as_millis()).unwrap_or(u64::MAX));
    // A new value on almost every call: see `never_indexed`.
    never_indexed(&mut v);
    v
}

/// Marks a value that changes with every request (a trace, a deadline)
/// as HPACK's "never indexed": over HTTP/2 the encoder then writes it as
/// a literal instead of inserting it into the connection's dynamic table,
/// where a value seen once only evicts the claim header and the other
/// values worth remembering, at the cost of a copy and a table insert per
/// hop (some 6% of a 5,000-service mesh's CPU went to HPACK's table).
/// HTTP/1.1 ignores the mark.
fn never_indexed(v: &mut http::HeaderValue) {
    v.set_sensitive(true);
}

/// Reading and writing a [`Trace`] in the `x-chaoslab-trace` header.
pub trait TraceHeader: Sized {
    /// Reads the trace header. A missing or malformed root yields `None`
    /// (the request opens a new root); a missing or malformed depth reads
    /// as 0. A peer's bad header never fails a request.
    fn from_headers(headers: &http::HeaderMap) -> Option<Self> {
        Self::from_value(headers.get(&TRACE)?)
    }
    /// Reads a trace header's value, as [`TraceHeader::from_headers`]
    /// does.
    fn from_value(v: &http::HeaderValue) -> Option<Self>;
    /// The header value that carries this trace.
    fn header_value(self) -> http::HeaderValue;
}

impl TraceHeader for Trace {
    fn from_value(v: &http::HeaderValue) -> Option<Trace> {
        // Read as `str::parse` reads the text, but on the bytes: every
        // request pays for this (see the test against the `str` way).
        let v = v.to_str().ok()?.as_bytes().trim_ascii();
        let (root, depth) = match v.iter().position(|&b| b == b'-') {
            Some(i) => (&v[..i], &v[i + 1..]),
            None => (v, &b""[..]),
        };
        Some(Trace {
            root: parse_decimal(root)?,
            depth: parse_decimal(depth)
                .and_then(|d| u32::try_from(d).ok())
                .unwrap_or(0),
        })
    }

    fn header_value(self) -> http::HeaderValue {
        // u64::MAX and u32::MAX with the dash fit in 31 bytes. Written
        // backwards by hand: `write!` costs several times as much, on
        // every outbound attempt.
        let mut buf = [0u8; 32];
        let mut at = write_decimal(&mut buf, 32, u64::from(self.depth));
        at -= 1;
        buf[at] = b'-';
        at = write_decimal(&mut buf, at, self.root);
        // The value's bytes are this buffer itself, shared by every copy
        // of the request's headers reqwest makes on the way to the
        // socket (three): a copied slice would be allocated, and then
        // allocated again as shared on the first of them.
        let text = bytes::Bytes::from_owner(TraceText { buf, at: at as u8 });
        let mut v = http::HeaderValue::from_maybe_shared(text)
            .expect("digits and a dash are a valid header value");
        never_indexed(&mut v);
        v
    }
}

/// A trace header's text, written at the end of its buffer from `at`.
struct TraceText {
    buf: [u8; 32],
    at: u8,
}

impl AsRef<[u8]> for TraceText {
    fn as_ref(&self) -> &[u8] {
        &self.buf[usize::from(self.at)..]
    }
}

/// Reads an unsigned decimal as `u64::from_str` does: an optional `+`,
/// then at least one digit and nothing else, without overflow.
fn parse_decimal(v: &[u8]) -> Option<u64> {
    let digits = v.strip_prefix(b"+").unwrap_or(v);
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u64, |n, &b| {
        let d = b.wrapping_sub(b'0');
        if d >= 10 {
            return None;
        }
        n.checked_mul(10)?.checked_add(u64::from(d))
    })
}

/// Writes `n` in decimal into `buf`, ending before `end`; returns where
/// it starts.
fn write_decimal(buf: &mut [u8], mut end: usize, mut n: u64) -> usize {
    loop {
        end -= 1;
        buf[end] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return end;
        }
    }
}

/// The context of one inbound request.
#[derive(Debug, Clone, Copy)]
pub struct RequestContext {
    /// Where the request sits in its call tree.
    pub trace: Trace,
    /// Whether this request opened the root (no root header arrived).
    pub is_root: bool,
    /// When its caller stops waiting for the answer, when that is known:
    /// the deadline its caller propagated, or for a root request the end
    /// user's patience (`load.timeout`).
    pub deadline: Option<Instant>,
    /// Whether the deadline was propagated to this service
    /// (`deadline: propagate`), so that its work acts on it; a deadline
    /// known but not propagated is only observed (late attempts).
    pub deadline_propagated: bool,
}

impl RequestContext {
    /// A fresh context.
    pub fn new(trace: Trace, is_root: bool) -> RequestContext {
        RequestContext {
            trace,
            is_root,
            deadline: None,
            deadline_propagated: false,
        }
    }

    /// This context with a deadline: `at`, propagated to the service (it
    /// acts on it) or only known (it observes it).
    pub fn with_deadline(mut self, at: Option<Instant>, propagated: bool) -> RequestContext {
        self.deadline = at;
        self.deadline_propagated = propagated && at.is_some();
        self
    }

    /// The deadline the service acts on: the one its caller propagated.
    pub fn propagated_deadline(&self) -> Option<Instant> {
        self.deadline.filter(|_| self.deadline_propagated)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_trace_headers_are_ignored() {
        let mut h = http::HeaderMap::new();
        assert_eq!(Trace::from_headers(&h), None);
        for bad in ["not-a-number", "-3", "", "4 2-1"] {
            h.insert(TRACE_HEADER, bad.parse().unwrap());
            assert_eq!(Trace::from_headers(&h), None, "{bad:?}");
        }
        for (v, depth) in [("42", 0), ("42--3", 0), ("42-x", 0), ("42-3", 3)] {
            h.insert(TRACE_HEADER, v.parse().unwrap());
            assert_eq!(
                Trace::from_headers(&h),
                Some(Trace { root: 42, depth }),
                "{v:?}"
            );
        }
    }

    /// The trace header read through `str`, as it first was: the byte
    /// reader must agree with it on everything.
    fn trace_the_str_way(h: &http::HeaderMap) -> Option<Trace> {
        let v = h.get(&TRACE)?.to_str().ok()?.trim();
        let (root, depth) = v.split_once('-').unwrap_or((v, ""));
        Some(Trace {
            root: root.parse().ok()?,
            depth: depth.parse().unwrap_or(0),
        })
    }

    #[test]
    fn trace_headers_read_as_str_parse_reads_them() {
        let max = u64::MAX.to_string();
        let over = format!("{}0", u64::MAX);
        let mut values: Vec<String> = [
            "0",
            "+7",
            "+",
            "++7",
            "7-+3",
            "7-",
            "-",
            "--",
            " 9 - 2 ",
            "9\t-\t2",
            "\t9-2\t",
            "9-4294967295",
            "9-4294967296",
            "9-2-1",
            "09-002",
            "9x",
            "9-2x",
            "1e3",
            "9-\u{7f}",
            &max,
            &over,
        ]
        .iter()
        .map(|v| v.to_string())
        .collect();
        for a in ["", "1", "+1", "-", " ", "x", "42", "\t", "9"] {
            for b in ["", "-", "1", "+", "x", " ", "3", "--2"] {
                for c in ["", "0", "7", "-", " ", "u"] {
                    values.push(format!("{a}{b}{c}"));
                }
            }
        }
        let mut h = http::HeaderMap::new();
        let mut read = 0;
        for v in &values {
            let Ok(value) = http::HeaderValue::from_str(v) else {
                continue;
            };
            h.insert(&TRACE, value);
            assert_eq!(Trace::from_headers(&h), trace_the_str_way(&h), "{v:?}");
            read += 1;
        }
        // Bytes `str` refuses (obs-text) read as no trace either way.
        h.insert(&TRACE, http::HeaderValue::from_bytes(b"9-\xe9").unwrap());
        assert_eq!(Trace::from_headers(&h), None);
        assert_eq!(trace_the_str_way(&h), None);
        assert!(read > 400);
    }

    #[test]
    fn malformed_deadline_headers_read_as_no_deadline() {
        let mut h = http::HeaderMap::new();
        assert_eq!(deadline_from_headers(&h), None);
        let too_big = format!("{}0", u64::MAX);
        for bad in [
            "", " ", "-5", "+5", "5ms", "1.5", "abc", "0x10", "4 2", &too_big,
        ] {
            h.insert(DEADLINE_HEADER, bad.parse().unwrap());
            assert_eq!(deadline_from_headers(&h), None, "{bad:?}");
        }
        for (v, ms) in [("0", 0), ("250", 250), (" 17 ", 17)] {
            h.insert(DEADLINE_HEADER, v.parse().unwrap());
            assert_eq!(
                deadline_from_headers(&h),
                Some(Duration::from_millis(ms)),
                "{v:?}"
            );
        }
        h.insert(DEADLINE_HEADER, u64::MAX.to_string().parse().unwrap());
        assert_eq!(
            deadline_from_headers(&h),
            Some(Duration::from_millis(u64::MAX))
        );
    }

    #[test]
    fn a_deadline_is_sent_rounded_down_to_the_millisecond() {
        let mut h = http::HeaderMap::new();
        for (left, ms) in [(Duration::from_micros(249_999), 249), (Duration::ZERO, 0)] {
            h.insert(&DEADLINE, deadline_header_value(left));
            assert_eq!(deadline_from_headers(&h), Some(Duration::from_millis(ms)));
        }
    }

    #[test]
    fn only_a_propagated_deadline_is_acted_on() {
        let t = Trace { root: 1, depth: 0 };
        let at = Some(Instant::now());
        let known = RequestContext::new(t, true).with_deadline(at, false);
        assert_eq!((known.deadline, known.propagated_deadline()), (at, None));
        let sent = RequestContext::new(t, false).with_deadline(at, true);
        assert_eq!(sent.propagated_deadline(), at);
        let none = RequestContext::new(t, false).with_deadline(None, true);
        assert!(!none.deadline_propagated);
    }

    #[test]
    fn trace_round_trips_through_its_header() {
        for t in [
            Trace { root: 0, depth: 0 },
            Trace {
                root: 8812,
                depth: 3,
            },
            Trace {
                root: u64::MAX,
                depth: u32::MAX,
            },
        ] {
            let mut h = http::HeaderMap::new();
            h.insert(&TRACE, t.header_value());
            assert_eq!(Trace::from_headers(&h), Some(t));
        }
    }

    #[test]
    fn values_new_on_every_request_are_never_indexed_by_hpack() {
        // h2 writes a sensitive value as a literal, never into the
        // connection's dynamic table.
        assert!(Trace { root: 7, depth: 1 }.header_value().is_sensitive());
        let d = deadline_header_value(Duration::from_millis(250));
        assert!(d.is_sensitive());
        assert_eq!(d, "250");
    }

    #[test]
    fn the_lab_headers_read_in_one_pass_as_by_name() {
        // A few headers (one pass) and many (look-ups by name), each with
        // a repeated trace: the first value is read, as `get` reads it.
        for others in [1, 30] {
            let mut h = http::HeaderMap::new();
            for k in 0..others {
                h.insert(
                    http::HeaderName::try_from(format!("x-other-{k}")).unwrap(),
                    http::HeaderValue::from_static("1"),
                );
            }
            assert!(Carried::of(&h).trace.is_none() && Carried::of(&h).deadline.is_none());
            h.append(&TRACE, http::HeaderValue::from_static("7-2"));
            h.append(&TRACE, http::HeaderValue::from_static("9-1"));
            h.insert(&DEADLINE, http::HeaderValue::from_static("250"));
            let c = Carried::of(&h);
            assert_eq!(c.trace, h.get(&TRACE), "{others} other headers");
            assert_eq!(c.deadline, h.get(&DEADLINE));
            assert_eq!(
                c.trace.and_then(Trace::from_value),
                Some(Trace { root: 7, depth: 2 })
            );
            assert_eq!(
                c.deadline.and_then(deadline_from_value),
                Some(Duration::from_millis(250))
            );
        }
    }
}
