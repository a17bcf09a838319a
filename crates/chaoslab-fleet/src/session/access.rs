//! Who may drive a session from outside: the names its endpoints answer
//! to, and the token a request must carry. The session keeps them for
//! its endpoints (the control API, the metrics endpoint) and sends the
//! token to the nodes it starts or drives.

use std::fmt;

use subtle::ConstantTimeEq;

/// The environment variable that gives the control API's token (as
/// `--control-token-file` does).
pub const TOKEN_VAR: &str = "CHAOSLAB_CONTROL_TOKEN";

/// Who may call the session's endpoints.
#[derive(Debug, Clone, Default)]
pub struct Access {
    /// Host names the endpoints answer to besides the address they are
    /// bound to and `localhost` (`--control-host`), lower case.
    pub hosts: Vec<String>,
    /// The token every control-API request must carry
    /// (`Authorization: Bearer …`); the nodes the session drives get it
    /// too.
    pub token: Option<Token>,
    /// `--control-insecure`: serve the control API off loopback with no
    /// token.
    pub insecure: bool,
}

/// A bearer token. Its `Debug` does not show it.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Token(<{} bytes>)", self.0.len())
    }
}

impl Token {
    /// A token from `text` (a file's contents, a variable): surrounding
    /// white space is dropped; what is left must be 16 to 4096 visible
    /// ASCII characters with no space, so it fits a header as it is.
    pub fn new(text: &str) -> Result<Token, String> {
        let t = text.trim();
        if t.len() < 16 {
            return Err(format!(
                "a token of {} characters is too short to guess at: give at least 16 (e.g. `head -c 32 /dev/urandom | base64`)",
                t.len()
            ));
        }
        if t.len() > 4096 {
            return Err(format!("a token of {} bytes: at most 4096", t.len()));
        }
        if let Some(c) = t.chars().find(|c| !c.is_ascii_graphic()) {
            return Err(format!(
                "a token is visible ASCII with no spaces, and this one holds {c:?}"
            ));
        }
        Ok(Token(t.to_string()))
    }

    /// Whether an `Authorization` header's value carries this token
    /// (`Bearer TOKEN`), compared in constant time.
    pub fn admits(&self, authorization: &[u8]) -> bool {
        let Some(given) = authorization
            .strip_prefix(b"Bearer ")
            .or_else(|| authorization.strip_prefix(b"bearer "))
        else {
            return false;
        };
        bool::from(given.trim_ascii().ct_eq(self.0.as_bytes()))
    }

    /// The `Authorization` header's value that carries it.
    pub fn header_value(&self) -> String {
        format!("Bearer {}", self.0)
    }

    /// The token itself, for a node process's environment.
    pub fn secret(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_admits_its_own_bearer_header_only() {
        let t = Token::new("  s3cret-token-of-24-bytes\n").unwrap();
        assert!(t.admits(b"Bearer s3cret-token-of-24-bytes"));
        assert!(t.admits(b"bearer s3cret-token-of-24-bytes "));
        assert!(!t.admits(b"Bearer s3cret-token-of-24-byteS"));
        assert!(!t.admits(b"Bearer s3cret-token-of-24-byte"));
        assert!(!t.admits(b"s3cret-token-of-24-bytes"));
        assert!(!t.admits(b"Basic s3cret-token-of-24-bytes"));
        assert!(!t.admits(b""));
        assert_eq!(format!("{t:?}"), "Token(<24 bytes>)");
        assert_eq!(t.header_value(), "Bearer s3cret-token-of-24-bytes");
    }

    #[test]
    fn a_token_too_short_or_unprintable_is_refused_with_why() {
        assert!(Token::new("short").unwrap_err().contains("at least 16"));
        assert!(Token::new("sixteen chars!! with space")
            .unwrap_err()
            .contains("no spaces"));
        assert!(Token::new(&"x".repeat(5000)).unwrap_err().contains("4096"));
        assert!(Token::new("").is_err());
    }
}
