//! `--metrics` and `--control`: where the lab's endpoints listen and who
//! may call them.

use std::path::PathBuf;

use clap::Args;

/// `--metrics` and `--control`, and who may call them.
#[derive(Debug, Args, Default, Clone)]
pub struct EndpointArgs {
    /// Serve Prometheus metrics (`GET /metrics`) on this address (`9100`,
    /// `:0` for a free port, `HOST:PORT`; 127.0.0.1 unless it says
    /// otherwise).
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<String>,
    /// Serve the control API (`GET /state`, `POST /actions`, `GET
    /// /report`) on this address (as `--metrics`).
    #[arg(long, value_name = "ADDR")]
    pub control: Option<String>,
    /// A name the endpoints answer to besides the address they listen on
    /// and `localhost` (the `Host` a client sends, e.g. a Service's DNS
    /// name); repeat it for each. Any other `Host` gets 421.
    #[arg(long = "control-host", value_name = "NAME")]
    pub control_hosts: Vec<String>,
    /// Ask every control-API request for the token in this file
    /// (`Authorization: Bearer …`); `CHAOSLAB_CONTROL_TOKEN` gives it
    /// too. Needed to serve the control API off loopback.
    #[arg(long, value_name = "FILE")]
    pub control_token_file: Option<PathBuf>,
    /// Serve the control API off loopback with no token: anyone who can
    /// reach the address can drive the lab.
    #[arg(long)]
    pub control_insecure: bool,
}
