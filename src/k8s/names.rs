//! Names Kubernetes accepts, made from the names a topology allows.
//!
//! A topology may call its services `A`, `Checkout API` or `日本`; a
//! Kubernetes Service name is a DNS label that starts with a letter
//! (RFC 1035: lower-case letters, digits and `-`, at most 63
//! characters), and it is also the host name the other pods call. Each
//! service is mapped to such a label by [`dns_label`]; two services that
//! map to the same label are refused by [`service_labels`] rather than
//! silently merged into one Deployment. The labels are valid label
//! values too, so they serve as `chaoslab.dev/service` and
//! `chaoslab.dev/topology`; the original names travel in annotations,
//! which take any text.
//!
//! ```
//! use chaoslab::k8s::names::dns_label;
//!
//! assert_eq!(dns_label("A"), "a");
//! assert_eq!(dns_label("Checkout API_v2"), "checkout-api-v2");
//! assert_eq!(dns_label("9lives"), "svc-9lives");
//! ```

use super::K8sError;
use crate::topology::Topology;

/// The longest DNS label (and label value).
pub const MAX_LABEL: usize = 63;

/// What a name that starts with a digit, or has no letter or digit at all,
/// is prefixed with (or becomes).
const PREFIX: &str = "svc";

/// `name` as a DNS label that starts with a letter: ASCII letters
/// lower-cased, every run of other characters one `-`, no `-` at either
/// end, `svc-` in front of a leading digit (`svc` alone when nothing is
/// left), cut to 63 characters.
pub fn dns_label(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if out.len() > MAX_LABEL {
            break; // the rest would be cut anyway
        }
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_end_matches('-');
    let mut label = match out.chars().next() {
        None => return PREFIX.to_string(),
        Some(c) if c.is_ascii_digit() => format!("{PREFIX}-{out}"),
        Some(_) => out.to_string(),
    };
    label.truncate(MAX_LABEL);
    label.trim_end_matches('-').to_string()
}

/// `label` cut to `max` characters, without a trailing `-` (a label
/// followed by a suffix stays a label).
pub fn cut(label: &str, max: usize) -> &str {
    label[..label.len().min(max)].trim_end_matches('-')
}

/// The label of every service the manifests start (`None` for an outside
/// `url:` service, which runs elsewhere), in topology order; an error
/// naming both services when two map to the same label.
pub fn service_labels(t: &Topology) -> Result<Vec<Option<String>>, K8sError> {
    let mut seen: std::collections::HashMap<String, &str> = Default::default();
    let mut labels: Vec<Option<String>> = Vec::with_capacity(t.services.len());
    for (id, s) in t.services.iter().enumerate() {
        if s.url.is_some() {
            labels.push(None);
            continue;
        }
        // A service's endpoints are one pod: its name's label.
        if s.group != id {
            labels.push(labels[s.group].clone());
            continue;
        }
        let name = s.service_name();
        let label = dns_label(name);
        if let Some(first) = seen.insert(label.clone(), name) {
            return Err(K8sError::NameClash {
                first: first.to_string(),
                second: name.to_string(),
                label,
            });
        }
        labels.push(Some(label));
    }
    Ok(labels)
}

/// Whether `s` is a DNS-1123 label: 1 to 63 of `a-z`, `0-9`, `-`,
/// starting and ending with a letter or digit.
pub fn is_dns_label(s: &str) -> bool {
    let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= MAX_LABEL
        && alnum(b[0])
        && alnum(b[b.len() - 1])
        && b.iter().all(|&c| alnum(c) || c == b'-')
}

/// Whether `s` is a Kubernetes label value: empty, or at most 63 of
/// letters, digits, `-`, `_`, `.`, starting and ending with a letter or
/// digit.
pub fn is_label_value(s: &str) -> bool {
    let b = s.as_bytes();
    b.is_empty()
        || (b.len() <= MAX_LABEL
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && b.iter()
                .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.')))
}

/// Checks `--namespace`: a DNS-1123 label.
pub fn check_namespace(ns: &str) -> Result<(), K8sError> {
    if is_dns_label(ns) {
        Ok(())
    } else {
        Err(K8sError::BadNamespace(ns.to_string()))
    }
}

/// Checks `--image` against the grammar of an image reference:
/// `[HOST[:PORT]/]PATH[:TAG][@ALGORITHM:HEX]`, where each part of the
/// path is lower-case letters and digits joined by `.`, `_`, `__` or
/// dashes, and a tag is at most 128 of letters, digits, `_`, `.`, `-`.
pub fn check_image(image: &str) -> Result<(), K8sError> {
    let bad = |why: &'static str| {
        Err(K8sError::BadImage {
            image: image.to_string(),
            why,
        })
    };
    if image.is_empty() {
        return bad("it is empty");
    }
    if image.len() > 255 {
        return bad("it is longer than 255 characters");
    }
    let (rest, digest) = match image.split_once('@') {
        Some((r, d)) => (r, Some(d)),
        None => (image, None),
    };
    if let Some(d) = digest {
        let ok = d.split_once(':').is_some_and(|(alg, hex)| {
            !alg.is_empty()
                && alg
                    .bytes()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || b"+._-".contains(&c))
                && hex.len() >= 32
                && hex.bytes().all(|c| c.is_ascii_hexdigit())
        });
        if !ok {
            return bad("the digest after `@` is not ALGORITHM:HEX (e.g. sha256:<64 hex digits>)");
        }
    }
    let slash = rest.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match rest[slash..].rfind(':') {
        Some(i) => (&rest[..slash + i], Some(&rest[slash + i + 1..])),
        None => (rest, None),
    };
    if let Some(tag) = tag {
        let b = tag.as_bytes();
        let ok = !b.is_empty()
            && b.len() <= 128
            && (b[0].is_ascii_alphanumeric() || b[0] == b'_')
            && b.iter()
                .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'));
        if !ok {
            return bad("the tag after `:` must be 1 to 128 letters, digits, `_`, `.` or `-`, not starting with `.` or `-`");
        }
    }
    let mut parts: Vec<&str> = name.split('/').collect();
    if parts.len() > 1 {
        let host = parts[0];
        let is_host = host.contains(['.', ':'])
            || host == "localhost"
            || host.bytes().any(|c| c.is_ascii_uppercase());
        if is_host {
            let (h, port) = host.split_once(':').unwrap_or((host, ""));
            let host_ok = !h.is_empty()
                && h.split('.').all(|l| {
                    !l.is_empty()
                        && !l.starts_with('-')
                        && !l.ends_with('-')
                        && l.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-')
                })
                && if port.is_empty() {
                    !host.ends_with(':')
                } else {
                    port.len() <= 5 && port.bytes().all(|c| c.is_ascii_digit())
                };
            if !host_ok {
                return bad("the registry host before the first `/` is not HOST[:PORT]");
            }
            parts.remove(0);
        }
    }
    if !parts.iter().all(|p| is_path_component(p)) {
        return bad("each part of the name must be lower-case letters and digits, joined by `.`, `_`, `__` or `-`");
    }
    Ok(())
}

/// `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*`.
fn is_path_component(p: &str) -> bool {
    let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let b = p.as_bytes();
    if b.is_empty() || !alnum(b[0]) || !alnum(b[b.len() - 1]) {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        if alnum(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && !alnum(b[i]) {
            i += 1;
        }
        let sep = &p[start..i];
        let ok = matches!(sep, "." | "_" | "__") || sep.bytes().all(|c| c == b'-');
        if !ok {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_labels_that_start_with_a_letter() {
        for (name, label) in [
            ("A", "a"),
            ("gateway", "gateway"),
            ("Checkout API", "checkout-api"),
            ("cart_v2", "cart-v2"),
            ("--edge--", "edge"),
            ("a..b", "a-b"),
            ("3d", "svc-3d"),
            ("-7-", "svc-7"),
            ("日本", "svc"),
            ("", "svc"),
            ("naïve", "na-ve"),
            ("UPPER", "upper"),
        ] {
            let got = dns_label(name);
            assert_eq!(got, label, "{name:?}");
            assert!(is_dns_label(&got) && is_label_value(&got), "{got}");
        }
    }

    #[test]
    fn long_names_are_cut_to_a_label() {
        let long = "x".repeat(70_000);
        assert_eq!(dns_label(&long), "x".repeat(63));
        // A cut that lands on a dash leaves no trailing dash.
        let name = format!("{}-tail", "y".repeat(62));
        let got = dns_label(&name);
        assert_eq!(got, "y".repeat(62));
        assert!(is_dns_label(&got));
        let digits = "1".repeat(100);
        assert_eq!(dns_label(&digits).len(), 63);
        assert!(is_dns_label(&dns_label(&digits)));
        assert_eq!(cut("abc-def", 4), "abc");
    }

    #[test]
    fn every_label_is_valid_for_any_name() {
        for name in ["a", "Z", "-", "_x_", "1", "x y z", "🦀crab🦀", "a\tb\n"] {
            let l = dns_label(name);
            assert!(is_dns_label(&l), "{name:?} -> {l:?}");
            assert!(l.starts_with(|c: char| c.is_ascii_lowercase()), "{l}");
        }
    }

    fn topology(services: &str) -> Topology {
        Topology::from_yaml(&format!("name: t\nservices:\n{services}"), "t.yaml").unwrap()
    }

    #[test]
    fn two_services_with_one_label_are_refused_by_name() {
        let t = topology("  A: { calls: [a] }\n  a: {}\n");
        let e = service_labels(&t).unwrap_err().to_string();
        assert!(
            e.contains("\"A\"") && e.contains("\"a\"") && e.contains("`a`"),
            "{e}"
        );
        let t = topology("  Cart API: { calls: [cart_api] }\n  cart_api: {}\n");
        let e = service_labels(&t).unwrap_err().to_string();
        assert!(e.contains("Cart API") && e.contains("cart_api"), "{e}");
        assert!(e.contains("cart-api"), "{e}");
    }

    #[test]
    fn outside_services_take_no_label_and_clash_with_nothing() {
        let t = topology("  A: { calls: [a] }\n  a: { url: \"http://example.com/\" }\n");
        assert_eq!(service_labels(&t).unwrap(), [Some("a".to_string()), None]);
        let t = topology("  A: { calls: [B] }\n  B: {}\n");
        assert_eq!(
            service_labels(&t).unwrap(),
            [Some("a".to_string()), Some("b".to_string())]
        );
    }

    #[test]
    fn namespaces_are_dns_labels() {
        for ok in ["default", "chaoslab", "lab-1", "a"] {
            assert!(check_namespace(ok).is_ok(), "{ok}");
        }
        for bad in ["", "Lab", "-x", "x-", "a_b", "a.b", &"n".repeat(64)] {
            assert!(check_namespace(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn images_follow_the_reference_grammar() {
        for ok in [
            "chaoslab",
            "chaoslab:dev",
            "ghcr.io/owner/chaoslab:0.1.0",
            "localhost:5000/chaoslab:latest",
            "registry.example.com:443/a/b/c",
            "my_org/my__img-x:v1.2_3",
            "chaoslab@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "chaoslab:dev@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        ] {
            assert!(check_image(ok).is_ok(), "{ok}: {:?}", check_image(ok));
        }
        for bad in [
            "",
            "Chaoslab",
            "chaos lab",
            "chaoslab:",
            "chaoslab:-x",
            "chaoslab:a/b",
            "/chaoslab",
            "chaoslab/",
            "a//b",
            "a___b",
            "chaoslab@sha256:xyz",
            "host:99999999/x",
            "host:/x",
            "chaoslab\n",
            "-chaoslab",
        ] {
            assert!(check_image(bad).is_err(), "{bad:?}");
        }
    }
}
