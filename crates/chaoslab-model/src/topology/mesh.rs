//! What a service answers and who retries for it, as the meshes people run
//! decide it (SPEC section 17): the status of an error it causes and of an
//! error it passes up (`errors:`), and a real proxy carrying its calls
//! (`sidecar:`).
//!
//! ```
//! use chaoslab_model::topology::Topology;
//! use chaoslab_model::topology::mesh::Passed;
//!
//! let t = Topology::from_yaml(
//!     "name: t\nservices:\n  A: { calls: [B], errors: { own: 503, passed: 502 } }\n  B: { errors: { passed: same } }\n",
//!     "t.yaml",
//! ).unwrap();
//! assert_eq!((t.services[0].errors.own, t.services[0].errors.passed), (503, Passed::Status(502)));
//! assert_eq!(t.services[1].errors.passed, Passed::Same);
//! assert_eq!(t.services[1].errors.own, 500);
//! ```

use std::fmt;
use std::time::Duration;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

use crate::yaml;
use error_ownership::conditions::Failure;

/// The status of an error a service causes when nothing else says (an
/// injected fault sets its own with `fault.status`).
pub const DEFAULT_OWN_STATUS: u16 = 500;
/// The status of an error a service passes up when nothing else says.
pub const DEFAULT_PASSED_STATUS: u16 = 500;

/// `errors.passed:` a status, or `same`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Passed {
    /// Always this status.
    Status(u16),
    /// The status the failed call last returned; 504 after a timeout, 502
    /// after a refused or reset connection.
    Same,
}

impl Passed {
    /// The status a service answers when a call that last failed with
    /// `last` fails its request.
    pub fn status(self, last: Failure) -> u16 {
        match self {
            Passed::Status(s) => s,
            Passed::Same => last.passed_status(),
        }
    }

    /// How the file writes it.
    pub fn describe(self) -> String {
        match self {
            Passed::Status(s) => s.to_string(),
            Passed::Same => "same".into(),
        }
    }
}

/// A service's `errors:` in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Errors {
    /// An error it causes.
    pub own: u16,
    /// An error it passes up.
    pub passed: Passed,
}

impl Default for Errors {
    fn default() -> Self {
        Errors {
            own: DEFAULT_OWN_STATUS,
            passed: Passed::Status(DEFAULT_PASSED_STATUS),
        }
    }
}

/// `errors:` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorsSpec {
    /// `own:` the status of an error the service causes.
    #[serde(default, deserialize_with = "yaml::status")]
    pub own: Option<u16>,
    /// `passed:` a status, or `same`.
    #[serde(default, deserialize_with = "passed")]
    pub passed: Option<Passed>,
}

impl ErrorsSpec {
    /// The errors in force.
    pub fn to_errors(&self) -> Errors {
        let d = Errors::default();
        Errors {
            own: self.own.unwrap_or(d.own),
            passed: self.passed.unwrap_or(d.passed),
        }
    }
}

fn passed<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Passed>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Passed;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a status code from 100 to 599, or `same`")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Passed, E> {
            if v.trim() == "same" {
                return Ok(Passed::Same);
            }
            match v.trim().parse::<f64>() {
                Ok(n) => self.visit_f64(n),
                Err(_) => Err(E::custom(format!(
                    "passed must be a status code from 100 to 599 or `same`, got `{v}`"
                ))),
            }
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Passed, E> {
            self.visit_f64(v as f64)
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Passed, E> {
            self.visit_f64(v as f64)
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Passed, E> {
            yaml::whole(v, 100, 599, "passed")
                .map(|s| Passed::Status(s as u16))
                .map_err(|e| E::custom(format!("{e} (or `same`)")))
        }
    }
    d.deserialize_any(V).map(Some)
}

/// Which real proxy carries a service's calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProxyKind {
    /// Debian's `nginx-light`.
    Nginx,
    /// Debian's `haproxy`.
    Haproxy,
}

impl ProxyKind {
    /// Its name in the file.
    pub fn name(self) -> &'static str {
        match self {
            ProxyKind::Nginx => "nginx",
            ProxyKind::Haproxy => "haproxy",
        }
    }

    /// The program the lab starts.
    pub fn program(self) -> &'static str {
        self.name()
    }

    /// The Debian package that installs it.
    pub fn package(self) -> &'static str {
        match self {
            ProxyKind::Nginx => "nginx-light",
            ProxyKind::Haproxy => "haproxy",
        }
    }
}

/// nginx's `max_fails` when the file is silent (nginx's own default).
pub const NGINX_MAX_FAILS: u32 = 1;
/// nginx's `fail_timeout` when the file is silent (nginx's own default).
pub const NGINX_FAIL_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest `max_fails` accepted.
pub const MAX_MAX_FAILS: u32 = 1_000_000;

/// A service's `sidecar:` in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sidecar {
    /// Which proxy.
    pub kind: ProxyKind,
    /// nginx: failed attempts before a server is out for `fail_timeout`
    /// (0: never out).
    pub max_fails: u32,
    /// nginx: how long a server is out, and the window its fails count in.
    pub fail_timeout: Duration,
}

/// `sidecar:` as written: `kind:` and the keys of that proxy.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SidecarSpec {
    /// `kind:` nginx | haproxy.
    pub kind: ProxyKind,
    /// `max_fails:` (nginx).
    #[serde(default, deserialize_with = "max_fails")]
    pub max_fails: Option<u32>,
    /// `fail_timeout:` (nginx).
    #[serde(default, deserialize_with = "yaml::duration")]
    pub fail_timeout: Option<Duration>,
}

fn max_fails<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    yaml::number(
        d,
        "a whole number of failed attempts (0: never out)",
        "max_fails needs a whole number of failed attempts",
        |v| yaml::whole(v, 0, MAX_MAX_FAILS, "max_fails"),
    )
}

impl SidecarSpec {
    /// The keys set that `kind` has no such setting for.
    pub fn foreign_keys(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.kind == ProxyKind::Haproxy {
            if self.max_fails.is_some() {
                out.push("max_fails");
            }
            if self.fail_timeout.is_some() {
                out.push("fail_timeout");
            }
        }
        out
    }

    /// The sidecar in force.
    pub fn to_sidecar(&self) -> Sidecar {
        Sidecar {
            kind: self.kind,
            max_fails: self.max_fails.unwrap_or(NGINX_MAX_FAILS),
            fail_timeout: self.fail_timeout.unwrap_or(NGINX_FAIL_TIMEOUT),
        }
    }
}
