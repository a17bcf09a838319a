//! Where an endpoint listens: the address a flag names, bound on the
//! session's runtime, with an axum router serving it until the process
//! ends.

use std::net::SocketAddr;

use axum::Router;

use crate::error::RunError;
use tokio::runtime::Handle;

/// Where `--metrics` or `--control` binds: `9100` or `:9100` is
/// 127.0.0.1:9100, `:0` a free port, `HOST:PORT` as written.
pub fn parse_addr(flag: &str, s: &str) -> Result<SocketAddr, RunError> {
    let t = s.trim();
    let full = if let Some(port) = t.strip_prefix(':') {
        format!("127.0.0.1:{port}")
    } else if t.chars().all(|c| c.is_ascii_digit()) && !t.is_empty() {
        format!("127.0.0.1:{t}")
    } else {
        t.to_string()
    };
    full.parse().map_err(|_| {
        RunError::Usage(format!(
            "{flag} {s}: not an address to listen on (e.g. 9100, :0, 127.0.0.1:9100)"
        ))
    })
}

/// A listener bound for an endpoint, not yet serving.
#[derive(Debug)]
pub struct Bound {
    listener: tokio::net::TcpListener,
    /// The address bound (a free port for `:0`).
    pub addr: SocketAddr,
}

/// Binds `addr` on the runtime `rt`; a bind that fails says why,
/// naming the flag.
pub fn bind(rt: &Handle, flag: &str, addr: SocketAddr) -> Result<Bound, RunError> {
    let refuse =
        |e: std::io::Error| RunError::Usage(format!("{flag} {addr}: cannot listen there: {e}"));
    let std_listener = std::net::TcpListener::bind(addr).map_err(refuse)?;
    std_listener.set_nonblocking(true).map_err(refuse)?;
    let listener = {
        let _in_runtime = rt.enter();
        tokio::net::TcpListener::from_std(std_listener).map_err(refuse)?
    };
    let addr = listener
        .local_addr()
        .map_err(|e| RunError::Usage(format!("{flag} {addr}: {e}")))?;
    Ok(Bound { listener, addr })
}

impl Bound {
    /// Serves `app` on `rt` until the process ends;
    /// returns the address.
    pub fn serve(self, rt: &Handle, app: Router) -> SocketAddr {
        let Bound { listener, addr } = self;
        rt.spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        addr
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_default_to_loopback() {
        assert_eq!(
            parse_addr("--metrics", "9100").unwrap(),
            "127.0.0.1:9100".parse().unwrap()
        );
        assert_eq!(
            parse_addr("--metrics", ":0").unwrap(),
            "127.0.0.1:0".parse().unwrap()
        );
        assert_eq!(
            parse_addr("--metrics", "0.0.0.0:80").unwrap(),
            "0.0.0.0:80".parse().unwrap()
        );
        let e = parse_addr("--control", "localhost:x").unwrap_err();
        assert!(e
            .to_string()
            .starts_with("--control localhost:x: not an address"));
    }
}
