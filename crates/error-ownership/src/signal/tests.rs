use super::*;
use proptest::prelude::*;

/// The answer's headers as HTTP lines, read the way the retry client
/// reads them: repeated lines combined.
fn read_lines(signal: Signal, status: u16, lines: &[(&'static str, &'static str)]) -> Advice {
    let values = |name: &str| {
        crate::combined(
            lines
                .iter()
                .filter(|(n, _)| *n == name)
                .map(|(_, v)| v.as_bytes()),
        )
    };
    let all: Vec<_> = signal.headers().iter().map(|&n| (n, values(n))).collect();
    signal.read(status, |name| {
        all.iter()
            .find(|(n, _)| *n == name)
            .and_then(|(_, v)| v.as_deref())
    })
}

#[test]
fn a_repeated_singleton_reads_as_malformed_and_a_presence_header_as_present() {
    // gRPC: two pushbacks are not retried.
    assert_eq!(
        read_lines(
            Signal::Pushback,
            503,
            &[(GRPC_PUSHBACK_HEADER, "5"), (GRPC_PUSHBACK_HEADER, "10")]
        ),
        Advice::DontRetry(DontRetry::PushbackMalformed)
    );
    assert_eq!(
        read_lines(Signal::Pushback, 503, &[(GRPC_PUSHBACK_HEADER, "5")]),
        Advice::RetryAfter(Duration::from_millis(5))
    );
    // Retry-After with two values is ignored.
    assert_eq!(
        read_lines(
            Signal::RetryAfter,
            503,
            &[(RETRY_AFTER_HEADER, "1"), (RETRY_AFTER_HEADER, "2")]
        ),
        Advice::Silent
    );
    // Envoy's and Finagle's headers count by presence: still there.
    assert_eq!(
        read_lines(
            Signal::Overloaded,
            503,
            &[
                (ENVOY_OVERLOADED_HEADER, "true"),
                (ENVOY_OVERLOADED_HEADER, "true")
            ]
        ),
        Advice::DontRetry(DontRetry::Overloaded)
    );
    assert_eq!(
        read_lines(
            Signal::Nack,
            503,
            &[
                (NONRETRYABLE_NACK_HEADER, "1"),
                (NONRETRYABLE_NACK_HEADER, "1")
            ]
        ),
        Advice::DontRetry(DontRetry::NonRetryableNack)
    );
    assert_eq!(
        read_lines(Signal::Nack, 503, &[(NACK_HEADER, "1"), (NACK_HEADER, "2")]),
        Advice::Retry
    );
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Reads `headers` back through `signal`'s reader, as a caller would.
fn read_back(signal: Signal, status: u16, headers: &[(&'static str, String)]) -> Advice {
    signal.read(status, |name| {
        headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_bytes())
    })
}

#[test]
fn names_are_the_yaml_words() {
    let words: Vec<_> = Signal::ALL.iter().map(|s| s.name()).collect();
    assert_eq!(
        words,
        [
            "ownership",
            "nack",
            "overloaded",
            "pushback",
            "retry-after",
            "sre"
        ]
    );
    assert_eq!(Signal::parse("retry_after"), None);
    assert_eq!(Signal::parse("Nack"), None);
    assert_eq!(Signal::parse(""), None);
    // serde spells them the same way as `name`.
    for s in Signal::ALL {
        assert_eq!(serde_yaml::to_string(&s).unwrap().trim(), s.name(), "{s:?}");
    }
}

#[test]
fn sre_tells_task_overloaded_from_dont_retry() {
    let no = Advice::DontRetry(DontRetry::OverloadedDontRetry);
    assert_eq!(read_sre(503, Some(b"dont-retry")), no);
    assert_eq!(read_sre(429, Some(b" dont-retry ")), no);
    assert_eq!(read_sre(503, Some(b"task-overloaded")), Advice::Retry);
    // Only the two words: anything else leaves it to the other rules.
    assert_eq!(read_sre(503, Some(b"Dont-Retry")), Advice::Silent);
    assert_eq!(read_sre(503, Some(b"")), Advice::Silent);
    assert_eq!(read_sre(503, None), Advice::Silent);
    // A success is never advised on.
    assert_eq!(read_sre(200, Some(b"dont-retry")), Advice::Silent);
    assert_eq!(
        Signal::Sre.refusal_headers(Refusal::Overloaded, Duration::ZERO),
        [("x-overload", "dont-retry".to_string())]
    );
    assert_eq!(
        DontRetry::OverloadedDontRetry.key(),
        "overloaded-dont-retry"
    );
}

#[test]
fn ownership_follows_the_claim() {
    assert_eq!(read_ownership(500, Some(b"true")), Advice::Retry);
    assert_eq!(read_ownership(503, Some(b" CLAIMED ")), Advice::Retry);
    assert_eq!(
        read_ownership(500, Some(b"false")),
        Advice::DontRetry(DontRetry::Unclaimed)
    );
    assert_eq!(read_ownership(500, Some(b"yes")), Advice::Silent);
    assert_eq!(read_ownership(500, Some(b"\xff")), Advice::Silent);
    assert_eq!(read_ownership(500, None), Advice::Silent);
    assert_eq!(read_ownership(200, Some(b"false")), Advice::Silent);
}

#[test]
fn nack_needs_a_503() {
    assert_eq!(read_nack(503, Some(b"true"), None, None), Advice::Retry);
    assert_eq!(read_nack(500, Some(b"true"), None, None), Advice::Silent);
    assert_eq!(read_nack(429, None, Some(b"true"), None), Advice::Silent);
    assert_eq!(read_nack(200, Some(b"true"), None, None), Advice::Silent);
    assert_eq!(read_nack(503, None, None, None), Advice::Silent);
}

#[test]
fn nack_headers_count_by_presence() {
    // Finagle never reads the value: garbage, `false`, empty all count.
    for v in [&b"true"[..], b"false", b"", b"\xff\xfe", b"TRUE"] {
        assert_eq!(read_nack(503, Some(v), None, None), Advice::Retry, "{v:?}");
        assert_eq!(
            read_nack(503, None, Some(v), None),
            Advice::DontRetry(DontRetry::NonRetryableNack),
            "{v:?}"
        );
    }
}

#[test]
fn nonretryable_nack_wins_over_retryable() {
    assert_eq!(
        read_nack(503, Some(b"true"), Some(b"true"), Some(b"0")),
        Advice::DontRetry(DontRetry::NonRetryableNack)
    );
}

#[test]
fn retry_after_zero_is_a_retryable_nack() {
    assert_eq!(read_nack(503, None, None, Some(b"0")), Advice::Retry);
    assert_eq!(read_nack(503, None, None, Some(b" 0 ")), Advice::Retry);
    assert_eq!(read_nack(503, None, None, Some(b"1")), Advice::Silent);
    assert_eq!(read_nack(503, None, None, Some(b"00")), Advice::Silent);
    assert_eq!(read_nack(503, None, None, Some(b"-0")), Advice::Silent);
}

#[test]
fn overloaded_is_never_retried() {
    let no = Advice::DontRetry(DontRetry::Overloaded);
    assert_eq!(read_overloaded(503, Some(b"true")), no);
    assert_eq!(read_overloaded(500, Some(b"TRUE")), no);
    assert_eq!(read_overloaded(429, Some(b"true")), no);
    // Envoy tests presence, not the value.
    assert_eq!(read_overloaded(503, Some(b"false")), no);
    assert_eq!(read_overloaded(503, Some(b"")), no);
    assert_eq!(read_overloaded(503, Some(b"\x00\xff")), no);
    assert_eq!(read_overloaded(503, None), Advice::Silent);
    assert_eq!(read_overloaded(200, Some(b"true")), Advice::Silent);
}

#[test]
fn pushback_non_negative_is_a_delay() {
    assert_eq!(read_pushback(503, Some(b"0")), Advice::RetryAfter(ms(0)));
    assert_eq!(
        read_pushback(503, Some(b"250")),
        Advice::RetryAfter(ms(250))
    );
    assert_eq!(
        read_pushback(500, Some(b" 1000\t")),
        Advice::RetryAfter(ms(1000))
    );
    assert_eq!(read_pushback(503, Some(b"+7")), Advice::RetryAfter(ms(7)));
    assert_eq!(
        read_pushback(503, Some(b"9223372036854775807")),
        Advice::RetryAfter(ms(i64::MAX as u64))
    );
}

#[test]
fn pushback_negative_forbids() {
    for v in [&b"-1"[..], b"-250", b"-9223372036854775808"] {
        assert_eq!(
            read_pushback(503, Some(v)),
            Advice::DontRetry(DontRetry::PushbackNegative),
            "{v:?}"
        );
    }
}

#[test]
fn pushback_garbage_forbids() {
    for v in [
        &b""[..],
        b" ",
        b"abc",
        b"1.5",
        b"10ms",
        b"0x10",
        b"1 2",
        b"--1",
        b"\xff\xfe",
        b"9223372036854775808", // overflows i64, like Atoi
    ] {
        assert_eq!(
            read_pushback(503, Some(v)),
            Advice::DontRetry(DontRetry::PushbackMalformed),
            "{v:?}"
        );
    }
}

#[test]
fn pushback_missing_or_success_is_silent() {
    assert_eq!(read_pushback(503, None), Advice::Silent);
    assert_eq!(read_pushback(200, Some(b"-1")), Advice::Silent);
    assert_eq!(read_pushback(404, Some(b"garbage")), Advice::Silent);
}

#[test]
fn retry_after_reads_seconds() {
    let secs = |n| Advice::RetryAfter(Duration::from_secs(n));
    assert_eq!(read_retry_after(503, Some(b"0")), secs(0));
    assert_eq!(read_retry_after(503, Some(b"120")), secs(120));
    assert_eq!(read_retry_after(429, Some(b" 3 ")), secs(3));
    assert_eq!(read_retry_after(503, Some(b"007")), secs(7));
    assert_eq!(
        read_retry_after(503, Some(b"18446744073709551615")),
        secs(u64::MAX)
    );
}

#[test]
fn retry_after_ignores_dates_and_garbage() {
    for v in [
        &b"Fri, 31 Dec 1999 23:59:59 GMT"[..],
        b"fri, 31 dec 1999 23:59:59 gmt",
        b"-1",
        b"+5",
        b"1.5",
        b"",
        b"soon",
        b"\xff",
        b"18446744073709551616", // one past u64::MAX
    ] {
        assert_eq!(read_retry_after(503, Some(v)), Advice::Silent, "{v:?}");
    }
    assert_eq!(read_retry_after(503, None), Advice::Silent);
    assert_eq!(read_retry_after(200, Some(b"5")), Advice::Silent);
}

#[test]
fn refusals_are_written_in_each_dialect() {
    let hint = ms(1500);
    let w = |s: Signal, r| s.refusal_headers(r, hint);
    let pair = |n: &'static str, v: &str| (n, v.to_string());
    assert_eq!(
        w(Signal::Ownership, Refusal::Shed),
        [pair("x-error-claim", "true")]
    );
    assert_eq!(
        w(Signal::Nack, Refusal::Shed),
        [pair("finagle-http-nack", "true"), pair("retry-after", "0")]
    );
    assert_eq!(
        w(Signal::Nack, Refusal::Overloaded),
        [pair("finagle-http-nonretryable-nack", "true")]
    );
    for r in [Refusal::Shed, Refusal::Overloaded] {
        assert_eq!(
            w(Signal::Overloaded, r),
            [pair("x-envoy-overloaded", "true")]
        );
        // Rounded up: 1.5 s becomes 2 s.
        assert_eq!(w(Signal::RetryAfter, r), [pair("retry-after", "2")]);
    }
    assert_eq!(
        w(Signal::Pushback, Refusal::Shed),
        [pair("grpc-retry-pushback-ms", "1500")]
    );
    assert_eq!(
        w(Signal::Pushback, Refusal::Overloaded),
        [pair("grpc-retry-pushback-ms", "-1")]
    );
    assert_eq!(
        Signal::RetryAfter.refusal_headers(Refusal::Shed, Duration::from_secs(3)),
        [pair("retry-after", "3")]
    );
}

#[test]
fn read_asks_for_every_header_it_lists() {
    for s in Signal::ALL {
        let asked = std::cell::RefCell::new(Vec::new());
        s.read(503, |name| {
            asked.borrow_mut().push(name);
            None
        });
        assert_eq!(asked.into_inner(), s.headers(), "{s:?}");
    }
}

fn signal() -> impl Strategy<Value = Signal> {
    (0..Signal::ALL.len()).prop_map(|i| Signal::ALL[i])
}

fn refusal() -> impl Strategy<Value = Refusal> {
    prop_oneof![Just(Refusal::Shed), Just(Refusal::Overloaded)]
}

proptest! {
    #[test]
    fn parse_inverts_name(s in signal()) {
        prop_assert_eq!(Signal::parse(s.name()), Some(s));
    }

    /// No header value, however malformed, panics a reader, and a
    /// success is never advised on.
    #[test]
    fn readers_never_panic(
        status in 100u16..600,
        a in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..32)),
        b in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..32)),
        c in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..32)),
    ) {
        let (a, b, c) = (a.as_deref(), b.as_deref(), c.as_deref());
        let all = [
            read_ownership(status, a),
            read_nack(status, a, b, c),
            read_overloaded(status, a),
            read_pushback(status, a),
            read_retry_after(status, a),
            read_sre(status, a),
        ];
        if !is_error_status(status) {
            prop_assert!(all.iter().all(|v| *v == Advice::Silent));
        }
    }

    /// Any integer written as pushback reads back as gRPC A6 says.
    #[test]
    fn pushback_reads_any_integer(n in any::<i64>()) {
        let advice = read_pushback(503, Some(n.to_string().as_bytes()));
        if n < 0 {
            prop_assert_eq!(advice, Advice::DontRetry(DontRetry::PushbackNegative));
        } else {
            prop_assert_eq!(advice, Advice::RetryAfter(ms(n as u64)));
        }
    }

    /// What a refusing service writes, a caller in the same dialect
    /// reads as meant: an overloaded service is not retried where the
    /// dialect can say so, a shed request may come back, and never
    /// before the hint.
    #[test]
    fn refusals_read_back_as_meant(s in signal(), r in refusal(), hint_ms in 0u64..100_000) {
        let hint = ms(hint_ms);
        let advice = read_back(s, REFUSAL_STATUS, &s.refusal_headers(r, hint));
        match (s, r) {
            (Signal::Ownership, _) => prop_assert_eq!(advice, Advice::Retry),
            (Signal::Nack, Refusal::Shed) => prop_assert_eq!(advice, Advice::Retry),
            (Signal::Pushback, Refusal::Shed) => {
                prop_assert_eq!(advice, Advice::RetryAfter(hint))
            }
            (Signal::Sre, Refusal::Shed) => prop_assert_eq!(advice, Advice::Retry),
            (Signal::RetryAfter, _) => match advice {
                Advice::RetryAfter(d) => {
                    prop_assert!(d >= hint && d < hint + Duration::from_secs(1))
                }
                other => prop_assert!(false, "{:?}", other),
            },
            (_, _) => prop_assert!(matches!(advice, Advice::DontRetry(_)), "{:?}", advice),
        }
    }
}
