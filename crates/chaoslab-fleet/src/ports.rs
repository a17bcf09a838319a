//! Ports on loopback for other processes to listen on (a node, a
//! sidecar proxy): reserved outside the kernel's ephemeral range where
//! there is room, so an outgoing connection cannot take one between its
//! reservation and the process binding it.

use std::net::TcpListener;

/// Where the kernel picks the local ports of outgoing connections (and of
/// listeners bound to port 0): `net.ipv4.ip_local_port_range`, 32768 to
/// 60999 unless the machine says otherwise.
pub(crate) fn ephemeral_range() -> (u16, u16) {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| {
            let mut it = s.split_whitespace().map(str::parse::<u16>);
            Some((it.next()?.ok()?, it.next()?.ok()?))
        })
        .unwrap_or((32768, 60999))
}

/// The ports a node is given: the longest stretch of 10000..=65535 outside
/// the ephemeral range, or `None` when there is no stretch of a thousand.
///
/// A port is reserved here, let go, and bound again by the node a moment
/// later. Inside the ephemeral range, any process's next outgoing
/// connection may take it in between: beside a fleet test holding
/// thousands of connections, a node failed to start with "Address already
/// in use" on a port its session had just reserved. Outside it, only
/// another explicit bind can.
pub(crate) fn node_ports((lo, hi): (u16, u16)) -> Option<(u16, u16)> {
    const FIRST: u16 = 10_000;
    let below = (FIRST, lo.saturating_sub(1));
    let above = (hi.saturating_add(1).max(FIRST), u16::MAX);
    let len = |(a, b): (u16, u16)| if b >= a { u32::from(b - a) + 1 } else { 0 };
    let best = if len(below) >= len(above) {
        below
    } else {
        above
    };
    (len(best) >= 1000).then_some(best)
}

/// A port on 127.0.0.1 for another process to listen on, held (bound)
/// until it is let go just before that process starts: outside the
/// ephemeral range when there is room ([`node_ports`]), where only another
/// explicit bind can take it in between, else any free one.
pub(crate) fn free_port() -> std::io::Result<TcpListener> {
    use rand::RngExt;
    if let Some((a, b)) = node_ports(ephemeral_range()) {
        let span = u32::from(b - a) + 1;
        let start: u32 = rand::rng().random_range(0..span);
        for k in 0..256u32 {
            let port = a + ((start + k) % span) as u16;
            if let Ok(l) = TcpListener::bind(("127.0.0.1", port)) {
                return Ok(l);
            }
        }
    }
    TcpListener::bind(("127.0.0.1", 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stretch_outside_the_ephemeral_range() {
        // Linux's default: below it, from 10000.
        assert_eq!(node_ports((32768, 60999)), Some((10_000, 32_767)));
        // A range that starts low leaves the top.
        assert_eq!(node_ports((10_000, 60_000)), Some((60_001, 65_535)));
        // One that takes nearly everything leaves nothing worth a search.
        assert_eq!(node_ports((1024, 65_000)), None);
    }
}
