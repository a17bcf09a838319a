//! `retry_on:` as the topology file writes it: a list of Envoy's tokens
//! (`5xx`, `gateway-error`, `connect-failure`, ...), bare status codes (as
//! Istio's `retryOn` allows), `retriable-status-codes: [..]` and
//! `retriable-headers: [{ name, exact }]`, each checked at its own item.
//!
//! ```
//! use chaoslab_model::topology::spec::TopologySpec;
//! use chaoslab_model::yaml;
//!
//! let ok = "name: t\npolicy:\n  retry_on: [gateway-error, 409, { retriable-status-codes: [500] }]\nservices:\n  A:\n";
//! let spec: TopologySpec = yaml::from_str(ok, "t.yaml").unwrap();
//! let on = spec.policy.to_fields().retry_on.unwrap();
//! assert_eq!(on.describe(), "gateway-error, retriable-status-codes [409 500]");
//! let bad = "name: t\npolicy:\n  retry_on: [gateway-eror]\nservices:\n  A:\n";
//! let err = yaml::from_str::<TopologySpec>(bad, "t.yaml").unwrap_err().to_string();
//! assert!(err.starts_with("t.yaml:3:"), "{err}");
//! assert!(err.contains("did you mean `gateway-error`"), "{err}");
//! ```

use std::fmt;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;

use crate::yaml;
use error_ownership::conditions::{Condition, RetryOn, MAX_HEADER_BYTES, MAX_HEADER_RULES};

/// One item of `retry_on:`.
#[derive(Debug, Clone, PartialEq)]
enum Item {
    Any,
    Token(Condition),
    Codes(Vec<u16>),
    Headers(Vec<(String, String)>),
}

/// A status written in the file: a whole number from 100 to 599.
pub fn status_code(v: f64) -> Result<u16, String> {
    if v.fract() == 0.0 && (100.0..=599.0).contains(&v) {
        Ok(v as u16)
    } else {
        Err(format!(
            "a status must be a whole number from 100 to 599, got {v}"
        ))
    }
}

/// The words `retry_on:` accepts, for the did-you-mean.
fn words() -> Vec<&'static str> {
    let mut w: Vec<&str> = Condition::ALL.iter().map(|(w, _)| *w).collect();
    w.extend(["retriable-status-codes", "retriable-headers"]);
    w
}

fn token(v: &str) -> Result<Condition, String> {
    if let Some(c) = Condition::parse(v.trim()) {
        return Ok(c);
    }
    if let Ok(n) = v.trim().parse::<f64>() {
        return Err(status_code(n).err().unwrap_or_default());
    }
    let names = words();
    let key = v.trim();
    if key == "retriable-status-codes" || key == "retriable-headers" {
        let example = if key == "retriable-status-codes" {
            "{ retriable-status-codes: [503, 504] }, or the bare statuses: [503, 504]"
        } else {
            "{ retriable-headers: [{ name: x-error-claim, exact: \"true\" }] }"
        };
        return Err(format!("`{key}` needs what it retries: write {example}"));
    }
    let hint = yaml::did_you_mean(v, names.iter().copied())
        .map(|n| format!(" (did you mean `{n}`?)"))
        .unwrap_or_default();
    Err(format!(
        "unknown retry_on condition `{v}`{hint}; expected one of {}, or a status code",
        names.join(", ")
    ))
}

/// A list of codes, each checked.
struct Codes(Vec<u16>);

impl<'de> Deserialize<'de> for Codes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Codes(
            Vec::<Code>::deserialize(d)?
                .into_iter()
                .map(|c| c.0)
                .collect(),
        ))
    }
}

/// One status code, checked at its scalar.
struct Code(u16);

impl<'de> Deserialize<'de> for Code {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        yaml::number(
            d,
            "a status code from 100 to 599",
            "retriable-status-codes needs status codes from 100 to 599",
            status_code,
        )
        .map(|c| Code(c.expect("a number was read")))
    }
}

/// `retriable-headers:` one rule.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HeaderSpec {
    name: String,
    exact: String,
}

impl<'de> Deserialize<'de> for Item {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Item;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a retry condition (5xx, gateway-error, connect-failure, ...), a status code, or a map of retriable-status-codes or retriable-headers")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Item, E> {
                token(v).map(Item::Token).map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Item, E> {
                status_code(v as f64)
                    .map(|c| Item::Codes(vec![c]))
                    .map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Item, E> {
                self.visit_f64(v as f64)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Item, E> {
                status_code(v)
                    .map(|c| Item::Codes(vec![c]))
                    .map_err(E::custom)
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Item, A::Error> {
                let Some(key) = map.next_key::<String>()? else {
                    return Err(de::Error::custom(
                        "an empty map: write `retriable-status-codes: [..]` or `retriable-headers: [..]`",
                    ));
                };
                let item = match key.as_str() {
                    "retriable-status-codes" => Item::Codes(map.next_value::<Codes>()?.0),
                    "retriable-headers" => {
                        let rules: Vec<HeaderSpec> = map.next_value()?;
                        for r in &rules {
                            if r.name.len() > MAX_HEADER_BYTES || r.exact.len() > MAX_HEADER_BYTES {
                                return Err(de::Error::custom(format!(
                                    "retriable-headers: a name or value of at most {MAX_HEADER_BYTES} bytes"
                                )));
                            }
                            if http::HeaderName::from_bytes(r.name.as_bytes()).is_err() {
                                return Err(de::Error::custom(format!(
                                    "retriable-headers: `{}` is not a header name",
                                    r.name
                                )));
                            }
                        }
                        Item::Headers(rules.into_iter().map(|r| (r.name, r.exact)).collect())
                    }
                    other => {
                        let hint = yaml::did_you_mean(
                            other,
                            ["retriable-status-codes", "retriable-headers"],
                        )
                        .map(|n| format!(" (did you mean `{n}`?)"))
                        .unwrap_or_default();
                        return Err(de::Error::custom(format!(
                            "unknown retry_on key `{other}`{hint}; a map in retry_on holds retriable-status-codes or retriable-headers"
                        )));
                    }
                };
                if let Some(k) = map.next_key::<String>()? {
                    return Err(de::Error::custom(format!(
                        "one key per map in retry_on: `{k}` goes in an item of its own"
                    )));
                }
                Ok(item)
            }
        }
        d.deserialize_any(V)
    }
}

/// `retry_on` as the file writes it (`any` for [`RetryOn::ANY`]): what a
/// recorded scenario step writes, read back as the same set.
pub fn written(on: &RetryOn) -> String {
    if on.is_any() {
        return "any".into();
    }
    let mut items: Vec<String> = on.conditions().map(|c| c.name().to_string()).collect();
    let codes: Vec<String> = on.statuses().map(|c| c.to_string()).collect();
    if !codes.is_empty() {
        items.push(format!(
            "{{ retriable-status-codes: [{}] }}",
            codes.join(", ")
        ));
    }
    let rules: Vec<String> = on
        .header_rules()
        .map(|r| {
            format!(
                "{{ name: {:?}, exact: {:?} }}",
                r.name(),
                String::from_utf8_lossy(r.value())
            )
        })
        .collect();
    if !rules.is_empty() {
        items.push(format!("{{ retriable-headers: [{}] }}", rules.join(", ")));
    }
    format!("[{}]", items.join(", "))
}

/// `retry_on:` a list of conditions (or one condition alone), or `any`.
pub fn retry_on<'de, D: Deserializer<'de>>(d: D) -> Result<Option<RetryOn>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Vec<Item>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a list of retry conditions")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Vec<Item>, E> {
            if v.trim() == "any" {
                return Ok(vec![Item::Any]);
            }
            // Envoy's header form: comma-separated tokens in one string.
            v.split(',')
                .map(|w| token(w.trim()).map(Item::Token).map_err(E::custom))
                .collect()
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Vec<Item>, E> {
            status_code(v as f64)
                .map(|c| vec![Item::Codes(vec![c])])
                .map_err(E::custom)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Item>, A::Error> {
            let mut out = Vec::new();
            while let Some(i) = seq.next_element::<Item>()? {
                out.push(i);
            }
            Ok(out)
        }
    }
    let items = d.deserialize_any(V)?;
    let mut on = RetryOn::EMPTY;
    for item in items {
        match item {
            Item::Any => on = RetryOn::ANY,
            Item::Token(c) => on = on.with(c),
            Item::Codes(codes) => {
                for c in codes {
                    on = on.with_status(c);
                }
            }
            Item::Headers(rules) => {
                for (name, value) in rules {
                    on = on.with_header(&name, &value).ok_or_else(|| {
                        de::Error::custom(format!(
                            "retry_on holds at most {MAX_HEADER_RULES} retriable-headers rules"
                        ))
                    })?;
                }
            }
        }
    }
    Ok(Some(on))
}

#[cfg(test)]
mod tests {
    use crate::topology::spec::TopologySpec;
    use crate::yaml;

    fn parse(on: &str) -> Result<String, String> {
        let y = format!("name: t\npolicy:\n  retry_on: {on}\nservices:\n  A:\n");
        yaml::from_str::<TopologySpec>(&y, "t.yaml")
            .map(|s| s.policy.to_fields().retry_on.unwrap().describe())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn the_forms_envoy_and_istio_write() {
        assert_eq!(parse("[5xx]").unwrap(), "5xx");
        assert_eq!(
            parse("\"gateway-error,connect-failure\"").unwrap(),
            "gateway-error, connect-failure"
        );
        assert_eq!(
            parse("[503, reset]").unwrap(),
            "reset, retriable-status-codes [503]"
        );
        assert_eq!(
            parse("[{ retriable-headers: [{ name: x-error-claim, exact: \"true\" }] }]").unwrap(),
            "retriable-headers [x-error-claim: true]"
        );
        assert_eq!(parse("[]").unwrap(), "nothing");
        assert_eq!(parse("any").unwrap(), "any error (5xx, 429, no answer)");
    }

    #[test]
    fn what_is_written_reads_back() {
        use super::written;
        use error_ownership::conditions::{Condition, RetryOn};
        let sets = [
            RetryOn::ANY,
            RetryOn::EMPTY,
            crate::topology::policy::ISTIO_RETRY_ON,
            RetryOn::EMPTY
                .with(Condition::GatewayError)
                .with_header("x-error-claim", "true")
                .unwrap(),
        ];
        for on in sets {
            let y = format!(
                "name: t\npolicy:\n  retry_on: {}\nservices:\n  A:\n",
                written(&on)
            );
            let back = yaml::from_str::<TopologySpec>(&y, "t.yaml").unwrap();
            assert_eq!(
                back.policy.to_fields().retry_on.map(|b| *b),
                Some(on),
                "{y}"
            );
        }
    }

    #[test]
    fn mistakes_are_named_where_they_are() {
        let e = parse("[5xx, connect-falure]").unwrap_err();
        assert!(e.starts_with("t.yaml:3:"), "{e}");
        assert!(e.contains("did you mean `connect-failure`"), "{e}");
        let e = parse("[600]").unwrap_err();
        assert!(e.contains("from 100 to 599, got 600"), "{e}");
        let e = parse("[{ retriable-status-codes: [99] }]").unwrap_err();
        assert!(e.contains("from 100 to 599"), "{e}");
        let e = parse("[{ retriable-status-code: [500] }]").unwrap_err();
        assert!(e.contains("did you mean `retriable-status-codes`"), "{e}");
        let e = parse("[{ retriable-headers: [{ name: \"bad header\", exact: x }] }]").unwrap_err();
        assert!(e.contains("not a header name"), "{e}");
    }
}
