//! nginx's block syntax: tokens (quotes and escapes honoured, `#`
//! comments dropped) parsed into directives, each with the line it
//! starts on; and the values of a directive's arguments (one value, a time).

use std::time::Duration;

use crate::import::config::{BadInput, File};

/// One directive: `name args;` or `name args { block }`.
#[derive(Debug, Clone)]
pub(super) struct Directive {
    pub name: String,
    pub args: Vec<String>,
    pub line: usize,
    pub block: Option<Vec<Directive>>,
}

/// A token and the line it starts on.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word(String),
    Semi,
    Open,
    Close,
}

fn tokens(f: &File) -> Result<Vec<(Tok, usize)>, BadInput> {
    let mut out = vec![];
    let mut line = 1;
    let mut chars = f.text.chars().peekable();
    while let Some(&c) = chars.peek() {
        match c {
            '\n' => {
                line += 1;
                chars.next();
            }
            c if c.is_whitespace() => {
                chars.next();
            }
            '#' => {
                while let Some(&c) = chars.peek() {
                    if c == '\n' {
                        break;
                    }
                    chars.next();
                }
            }
            ';' => {
                out.push((Tok::Semi, line));
                chars.next();
            }
            '{' => {
                out.push((Tok::Open, line));
                chars.next();
            }
            '}' => {
                out.push((Tok::Close, line));
                chars.next();
            }
            _ => {
                let start = line;
                let mut w = String::new();
                while let Some(&c) = chars.peek() {
                    if c.is_whitespace() || matches!(c, ';' | '{' | '}') {
                        break;
                    }
                    if c == '"' || c == '\'' {
                        let q = c;
                        let qline = line;
                        chars.next();
                        let mut closed = false;
                        while let Some(c) = chars.next() {
                            match c {
                                '\\' => {
                                    if let Some(e) = chars.next() {
                                        if e == '\n' {
                                            line += 1;
                                        }
                                        w.push(e);
                                    }
                                }
                                c if c == q => {
                                    closed = true;
                                    break;
                                }
                                c => {
                                    if c == '\n' {
                                        line += 1;
                                    }
                                    w.push(c);
                                }
                            }
                        }
                        if !closed {
                            return Err(BadInput::at(
                                &f.name,
                                qline,
                                format!("a quoted string opened here is never closed (`{q}`)"),
                            ));
                        }
                        continue;
                    }
                    if c == '\\' {
                        chars.next();
                        if let Some(e) = chars.next() {
                            w.push(e);
                        }
                        continue;
                    }
                    w.push(c);
                    chars.next();
                }
                out.push((Tok::Word(w), start));
            }
        }
    }
    Ok(out)
}

/// Parses nginx's block syntax, keeping each directive's line.
pub(super) fn parse(f: &File) -> Result<Vec<Directive>, BadInput> {
    let toks = tokens(f)?;
    let mut i = 0;
    let top = block(f, &toks, &mut i, None)?;
    Ok(top)
}

/// Directives up to the `}` closing a block opened at `open` (`None`: the
/// file's end).
fn block(
    f: &File,
    toks: &[(Tok, usize)],
    i: &mut usize,
    open: Option<(&str, usize)>,
) -> Result<Vec<Directive>, BadInput> {
    let mut out = vec![];
    loop {
        let Some((t, line)) = toks.get(*i) else {
            return match open {
                None => Ok(out),
                Some((name, at)) => Err(BadInput::at(
                    &f.name,
                    at,
                    format!(
                        "the block of `{name}` opened here is never closed (a `}}` is missing)"
                    ),
                )),
            };
        };
        match t {
            Tok::Close => {
                *i += 1;
                return match open {
                    Some(_) => Ok(out),
                    None => Err(BadInput::at(
                        &f.name,
                        *line,
                        "unexpected `}`: no block is open here",
                    )),
                };
            }
            Tok::Semi => {
                return Err(BadInput::at(
                    &f.name,
                    *line,
                    "unexpected `;`: no directive before it",
                ))
            }
            Tok::Open => {
                return Err(BadInput::at(
                    &f.name,
                    *line,
                    "unexpected `{`: a block needs a directive's name before it",
                ))
            }
            Tok::Word(name) => {
                let (name, start) = (name.clone(), *line);
                *i += 1;
                let mut args = vec![];
                loop {
                    match toks.get(*i) {
                        Some((Tok::Word(w), _)) => {
                            args.push(w.clone());
                            *i += 1;
                        }
                        Some((Tok::Semi, _)) => {
                            *i += 1;
                            out.push(Directive {
                                name,
                                args,
                                line: start,
                                block: None,
                            });
                            break;
                        }
                        Some((Tok::Open, _)) => {
                            *i += 1;
                            let inner = block(f, toks, i, Some((&name, start)))?;
                            out.push(Directive {
                                name,
                                args,
                                line: start,
                                block: Some(inner),
                            });
                            break;
                        }
                        Some((Tok::Close, _)) | None => {
                            return Err(BadInput::at(
                                &f.name,
                                start,
                                format!("`{name}` is not ended by `;`"),
                            ));
                        }
                    }
                }
            }
        }
    }
}

/// nginx's time: `10s`, `500ms`, `1m30s`, a bare number of seconds.
pub(super) fn nginx_time(v: &str) -> Option<Duration> {
    let v = v.trim();
    if v.is_empty() {
        return None;
    }
    let mut total = 0.0f64;
    let mut rest = v;
    while !rest.is_empty() {
        rest = rest.trim_start();
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits == 0 {
            return None;
        }
        let x: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c.is_whitespace())
            .unwrap_or(rest.len());
        let secs = match &rest[..unit_len] {
            "" | "s" => 1.0,
            "ms" => 0.001,
            "m" => 60.0,
            "h" => 3600.0,
            "d" => 86_400.0,
            "w" => 604_800.0,
            "M" => 2_592_000.0,
            "y" => 31_536_000.0,
            _ => return None,
        };
        total += x * secs;
        rest = &rest[unit_len..];
    }
    Some(Duration::from_secs_f64(total))
}

/// The one argument of `d`.
pub(super) fn arg1<'a>(f: &File, d: &'a Directive) -> Result<&'a str, BadInput> {
    match d.args.as_slice() {
        [a] => Ok(a),
        _ => Err(BadInput::at(
            &f.name,
            d.line,
            format!("`{}` takes one value, got {}", d.name, d.args.len()),
        )),
    }
}

/// The one argument of `d`, a time.
pub(super) fn time_arg(f: &File, d: &Directive) -> Result<Duration, BadInput> {
    let a = arg1(f, d)?;
    nginx_time(a).ok_or_else(|| {
        BadInput::at(
            &f.name,
            d.line,
            format!("`{}`: `{a}` is not a time (write e.g. 10s, 500ms)", d.name),
        )
    })
}
