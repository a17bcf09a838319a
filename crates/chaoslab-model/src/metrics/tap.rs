//! One exchange as the wire tap sampled it: status, claim header value
//! and what the caller did next. The tap that samples them lives with the
//! fleet's counters; snapshots, the dashboard and `GET /tap` carry these.

use std::time::Duration;

use error_ownership::retry::StopReason;

/// One sampled exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Tapped {
    /// Its number, counting from 1: a reader skips what it has shown.
    pub seq: u64,
    /// When, since the tap started.
    pub t: Duration,
    /// The edge it was on.
    pub edge: usize,
    /// 0 for the first attempt.
    pub attempt: u32,
    /// The answer's status (`None`: no answer).
    pub status: Option<u16>,
    /// The claim header's value as sent (`None`: not sent).
    pub claim: Option<WireValue>,
    /// What the caller did next.
    pub then: Then,
}

/// A header value kept inline, without allocating: its first
/// [`WireValue::MAX`] bytes and whether there were more. Between
/// processes (a node's wire tap) it travels as its bytes and the cut
/// mark, and more than [`WireValue::MAX`] bytes are refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(into = "WireBytes", try_from = "WireBytes")]
pub struct WireValue {
    bytes: [u8; WireValue::MAX],
    len: u8,
    cut: bool,
}

/// A [`WireValue`] as JSON.
#[derive(serde::Serialize, serde::Deserialize)]
struct WireBytes {
    bytes: Vec<u8>,
    cut: bool,
}

impl From<WireValue> for WireBytes {
    fn from(v: WireValue) -> WireBytes {
        WireBytes {
            bytes: v.bytes[..usize::from(v.len)].to_vec(),
            cut: v.cut,
        }
    }
}

impl TryFrom<WireBytes> for WireValue {
    type Error = String;

    fn try_from(w: WireBytes) -> Result<WireValue, String> {
        if w.bytes.len() > WireValue::MAX {
            return Err(format!(
                "a header value of {} bytes: at most {} are kept",
                w.bytes.len(),
                WireValue::MAX
            ));
        }
        Ok(WireValue {
            cut: w.cut,
            ..WireValue::of(&w.bytes)
        })
    }
}

impl WireValue {
    /// Bytes kept.
    pub const MAX: usize = 24;

    /// The first [`WireValue::MAX`] bytes of `v`.
    pub fn of(v: &[u8]) -> WireValue {
        let n = v.len().min(Self::MAX);
        let mut bytes = [0; Self::MAX];
        bytes[..n].copy_from_slice(&v[..n]);
        WireValue {
            bytes,
            len: n as u8,
            cut: v.len() > n,
        }
    }

    /// The value as text (invalid UTF-8 replaced, `…` when cut).
    pub fn text(&self) -> String {
        let mut s = String::from_utf8_lossy(&self.bytes[..usize::from(self.len)]).into_owned();
        if self.cut {
            s.push('…');
        }
        s
    }
}

/// What a caller did after an attempt's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Then {
    /// The call succeeded.
    Done,
    /// It sent another attempt.
    Retried,
    /// It stopped, and why.
    Stopped(StopReason),
    /// The caller's sidecar proxy decides (an attempt of the proxy's, as
    /// its callee answered it).
    Proxy,
}
