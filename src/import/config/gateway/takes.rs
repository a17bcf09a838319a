//! Which rule of a route the lab's requests take: `GET /`, no headers, no
//! query, against a rule's matches (paths, exact, prefix or a regular
//! expression the lab can read; methods; headers and query parameters),
//! ranked as Gateway API's precedence orders them.

use serde_yaml::Value;

use super::show;

/// Whether a regular expression matches the whole path `/`: `Some` when
/// the lab can tell (literals, `.`, classes, `*`, `+`, `?`, anchors),
/// `None` for groups, alternation and the like.
pub(in crate::import::config) fn regex_matches_slash(re: &str) -> Option<bool> {
    #[derive(Debug)]
    enum Atom {
        Char(char),
        Any,
        Class(bool, Vec<(char, char)>),
    }
    let mut atoms: Vec<(Atom, u8)> = vec![]; // quantifier: b'1', b'*', b'+', b'?'
    let mut chars = re.trim_start_matches('^').chars().peekable();
    while let Some(c) = chars.next() {
        let atom = match c {
            '$' if chars.peek().is_none() => break,
            '.' => Atom::Any,
            '\\' => match chars.next()? {
                'd' => Atom::Class(false, vec![('0', '9')]),
                'w' => Atom::Class(false, vec![('a', 'z'), ('A', 'Z'), ('0', '9'), ('_', '_')]),
                c if c.is_ascii_alphanumeric() => return None,
                c => Atom::Char(c),
            },
            '[' => {
                let neg = chars.peek() == Some(&'^');
                if neg {
                    chars.next();
                }
                let mut items = vec![];
                let mut closed = false;
                let mut first = true;
                while let Some(c) = chars.next() {
                    if c == ']' && !first {
                        closed = true;
                        break;
                    }
                    first = false;
                    let lo = if c == '\\' { chars.next()? } else { c };
                    let mut look = chars.clone();
                    if look.next() == Some('-') && !matches!(look.peek(), None | Some(']')) {
                        chars.next();
                        let hi = chars.next()?;
                        let hi = if hi == '\\' { chars.next()? } else { hi };
                        items.push((lo, hi));
                    } else {
                        items.push((lo, lo));
                    }
                }
                if !closed {
                    return None;
                }
                Atom::Class(neg, items)
            }
            '(' | ')' | '|' | '{' | '}' | '^' | '$' => return None,
            '*' | '+' | '?' => return None,
            c => Atom::Char(c),
        };
        let q = match chars.peek() {
            Some('*') => b'*',
            Some('+') => b'+',
            Some('?') => b'?',
            _ => b'1',
        };
        if q != b'1' {
            chars.next();
            if matches!(chars.peek(), Some('?' | '+' | '*' | '{')) {
                return None;
            }
        }
        atoms.push((atom, q));
    }
    let text = ['/'];
    fn one(a: &Atom, c: char) -> bool {
        match a {
            Atom::Char(x) => *x == c,
            Atom::Any => c != '\n',
            Atom::Class(neg, items) => {
                items.iter().any(|(lo, hi)| (*lo..=*hi).contains(&c)) != *neg
            }
        }
    }
    fn go(atoms: &[(Atom, u8)], text: &[char]) -> bool {
        let Some(((a, q), rest)) = atoms.split_first() else {
            return text.is_empty();
        };
        let (min, max) = match q {
            b'*' => (0, usize::MAX),
            b'+' => (1, usize::MAX),
            b'?' => (0, 1),
            _ => (1, 1),
        };
        let mut k = 0;
        while k < text.len() && k < max && one(a, text[k]) {
            k += 1;
        }
        (min..=k).rev().any(|take| go(rest, &text[take..]))
    }
    Some(go(&atoms, &text))
}

/// How specifically an HTTPRoute rule takes the lab's requests (`GET /`,
/// no headers, no query): its best match's rank (higher wins, as Gateway
/// API orders an `Exact` path before a prefix and a method match before
/// none), or why it does not take them.
pub(in crate::import::config) fn taker(rule: &Value) -> Result<u32, String> {
    let Some(ms) = rule.get("matches").and_then(Value::as_sequence) else {
        return Ok(10);
    };
    if ms.is_empty() {
        return Ok(10);
    }
    let mut why = String::new();
    let mut best = None;
    for m in ms {
        match match_rank(m) {
            Ok(r) => best = Some(best.map_or(r, |b: u32| b.max(r))),
            Err(w) => why = w,
        }
    }
    best.ok_or(why)
}

fn match_rank(m: &Value) -> Result<u32, String> {
    let mut rank = 10;
    if let Some(p) = m.get("path") {
        let ty = p
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("PathPrefix");
        let v = p.get("value").and_then(Value::as_str).unwrap_or("/");
        let ok = match ty {
            "PathPrefix" => v.trim_end_matches('/').is_empty(),
            "Exact" => {
                rank = 20;
                v == "/"
            }
            "RegularExpression" => regex_matches_slash(v).unwrap_or(false),
            _ => false,
        };
        if !ok {
            return Err(format!(
                "its match asks for the path {ty} `{v}`, and the lab's requests are GET /"
            ));
        }
    }
    if let Some(meth) = m.get("method") {
        if meth.as_str() == Some("GET") {
            rank += 1;
        } else {
            return Err(format!(
                "its match asks for the method {}, and the lab's requests are GETs",
                show(meth)
            ));
        }
    }
    for (k, what) in [("headers", "headers"), ("queryParams", "query parameters")] {
        if m.get(k)
            .and_then(Value::as_sequence)
            .is_some_and(|h| !h.is_empty())
        {
            return Err(format!(
                "its match asks for {what}, which the lab's requests do not carry"
            ));
        }
    }
    Ok(rank)
}
