//! The grid of a sweep: `--vary NAME=FROM..TO:STEP` read and checked,
//! the cells it makes, and a cell's values put into the scenario's and
//! the topology's text where they say `${NAME}` (or `${NAME + 3}`,
//! `${NAME - 1}`, `${NAME * 2}`: a step that ends a trigger three
//! seconds after it starts is `at: ${TRIGGER + 3}s`). Pure: no fleet, no
//! files.

use std::fmt;

/// The most values one swept name may take.
pub const MAX_VALUES: usize = 1_000;

/// Values, steps and offsets are smaller than this: a value is written
/// into YAML as a plain number.
pub const MAX_ABS: f64 = 1e15;

/// The most names a sweep varies: a line or a grid.
pub const MAX_NAMES: usize = 2;

/// One `--vary NAME=FROM..TO:STEP`.
#[derive(Debug, Clone, PartialEq)]
pub struct Vary {
    /// The name the scenario writes as `${NAME}`.
    pub name: String,
    /// Its values, from FROM to TO by STEP (TO included when a step lands
    /// on it).
    pub values: Vec<f64>,
}

impl Vary {
    /// Parses `LOAD=60..140:20`. The message says what is wrong with it.
    pub fn parse(s: &str) -> Result<Vary, String> {
        let form = "as NAME=FROM..TO:STEP, e.g. LOAD=60..140:20";
        let (name, range) = s
            .split_once('=')
            .ok_or_else(|| format!("--vary {s}: no `=`; write it {form}"))?;
        let name = name.trim();
        if !is_name(name) {
            return Err(format!(
                "--vary {s}: `{name}` is not a name (a letter or `_`, then letters, digits or `_`)"
            ));
        }
        let (span, step) = range
            .split_once(':')
            .ok_or_else(|| format!("--vary {s}: no `:STEP`; write it {form}"))?;
        let (from, to) = span
            .split_once("..")
            .ok_or_else(|| format!("--vary {s}: no `FROM..TO`; write it {form}"))?;
        let number = |what: &str, v: &str| -> Result<f64, String> {
            v.trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| format!("--vary {s}: {what} `{}` is not a number", v.trim()))
        };
        let (from, to, step) = (
            number("FROM", from)?,
            number("TO", to)?,
            number("STEP", step)?,
        );
        if [from, to, step].iter().any(|x| x.abs() >= MAX_ABS) {
            return Err(format!(
                "--vary {s}: values and steps are below {MAX_ABS:e} in size"
            ));
        }
        if to < from {
            return Err(format!(
                "--vary {s}: the range is inverted ({to} is below {from}); write the smaller end first"
            ));
        }
        if step <= 0.0 {
            return Err(format!(
                "--vary {s}: the step must be above 0, so the range is not empty"
            ));
        }
        let n = ((to - from) / step + 1e-9).floor() + 1.0;
        if n > MAX_VALUES as f64 {
            return Err(format!(
                "--vary {s}: {n} values; at most {MAX_VALUES} (a larger step)"
            ));
        }
        let values: Vec<f64> = (0..n as usize)
            .map(|i| round(from + step * i as f64))
            .collect();
        if values.windows(2).any(|w| w[0] == w[1]) {
            return Err(format!(
                "--vary {s}: the step is below the values' precision (a billionth)"
            ));
        }
        Ok(Vary {
            name: name.to_string(),
            values,
        })
    }
}

/// Rounds away the float noise of `from + step × i` (0.1 + 0.2).
fn round(v: f64) -> f64 {
    (v * 1e9).round() / 1e9
}

fn is_name(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

/// A value as the text puts it: `60`, `0.05`, `-1.5`.
pub fn show(v: f64) -> String {
    let v = round(v);
    if v == v.trunc() && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// The grid the names make: every combination, the first name varying
/// fastest.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    /// The swept names, in the order given.
    pub vary: Vec<Vary>,
}

/// One point of the grid: a value per name, in the grid's order.
#[derive(Debug, Clone, PartialEq)]
pub struct Point(pub Vec<(String, f64)>);

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (n, v)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{n}={}", show(*v))?;
        }
        Ok(())
    }
}

impl Grid {
    /// Reads every `--vary`: one or two names, each once.
    pub fn parse(flags: &[String]) -> Result<Grid, String> {
        if flags.is_empty() {
            return Err(
                "no --vary: give one or two, e.g. --vary LOAD=60..140:20 --vary TRIGGER=1..9:2"
                    .into(),
            );
        }
        if flags.len() > MAX_NAMES {
            return Err(format!(
                "{} --vary flags: a sweep varies one or two names (a line or a grid)",
                flags.len()
            ));
        }
        let vary = flags
            .iter()
            .map(|f| Vary::parse(f))
            .collect::<Result<Vec<_>, _>>()?;
        if let [a, b] = &vary[..] {
            if a.name == b.name {
                return Err(format!("--vary {}: the name is varied twice", a.name));
            }
        }
        Ok(Grid { vary })
    }

    /// How many points.
    pub fn len(&self) -> usize {
        self.vary.iter().map(|v| v.values.len()).product()
    }

    /// Never: a grid has at least one point.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every point, the first name varying fastest (a row of the heatmap
    /// at a time).
    pub fn points(&self) -> Vec<Point> {
        (0..self.len())
            .map(|mut k| {
                Point(
                    self.vary
                        .iter()
                        .map(|v| {
                            let x = v.values[k % v.values.len()];
                            k /= v.values.len();
                            (v.name.clone(), x)
                        })
                        .collect(),
                )
            })
            .collect()
    }
}

/// A `${...}` the text holds: where, the name, and what is done to it.
/// An escaped one, `$${`, stands for a plain `${` (in a comment, say).
#[derive(Debug, Clone, PartialEq)]
struct Slot {
    start: usize,
    end: usize,
    /// `$${`: written as `${`, no name.
    escaped: bool,
    name: String,
    op: Option<(char, f64)>,
    text: String,
    line: usize,
    col: usize,
}

/// Every `${...}` in `text`, or the first that is not `${NAME}` nor
/// `${NAME op NUMBER}` (`origin:line:col: ...`); `$${` is a plain `${`.
fn slots(text: &str, origin: &str) -> Result<Vec<Slot>, String> {
    let mut out = vec![];
    let mut from = 0;
    while let Some(i) = text[from..].find("${") {
        let start = from + i;
        let before = &text[..start];
        let line = before.matches('\n').count() + 1;
        let col = start - before.rfind('\n').map_or(0, |n| n + 1) + 1;
        if start > from && text.as_bytes()[start - 1] == b'$' {
            out.push(Slot {
                start: start - 1,
                end: start + 2,
                escaped: true,
                name: String::new(),
                op: None,
                text: String::new(),
                line,
                col: col - 1,
            });
            from = start + 2;
            continue;
        }
        let at = format!("{origin}:{line}:{col}");
        let close = text[start..]
            .find('}')
            .filter(|c| !text[start..start + c].contains('\n'))
            .ok_or_else(|| format!("{at}: `${{` is not closed by `}}` on its line"))?;
        let end = start + close + 1;
        let inner = text[start + 2..end - 1].trim();
        let op_at = inner.find(['+', '-', '*']);
        let (name, op) = match op_at {
            None => (inner, None),
            Some(k) => {
                let n: f64 = inner[k + 1..]
                    .trim()
                    .parse()
                    .ok()
                    .filter(|n: &f64| n.abs() < MAX_ABS)
                    .ok_or_else(|| {
                        format!(
                            "{at}: `${{{inner}}}`: after `{}` a number is wanted (`${{NAME + 3}}`)",
                            &inner[k..=k]
                        )
                    })?;
                (inner[..k].trim(), Some((inner.as_bytes()[k] as char, n)))
            }
        };
        if !is_name(name) {
            return Err(format!(
                "{at}: `${{{inner}}}` is not `${{NAME}}` nor `${{NAME + N}}`"
            ));
        }
        out.push(Slot {
            start,
            end,
            escaped: false,
            name: name.to_string(),
            op,
            text: inner.to_string(),
            line,
            col,
        });
        from = end;
    }
    Ok(out)
}

/// The names `text` uses as `${NAME}`, in order of first use.
pub fn names_used(text: &str, origin: &str) -> Result<Vec<String>, String> {
    let mut names: Vec<String> = vec![];
    for s in slots(text, origin)? {
        if !s.escaped && !names.contains(&s.name) {
            names.push(s.name);
        }
    }
    Ok(names)
}

/// `text` with every `${NAME}` of `point` put in. A name the point does
/// not give is an error naming where it is used.
pub fn substitute(text: &str, origin: &str, point: &Point) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for s in slots(text, origin)? {
        if s.escaped {
            out.push_str(&text[last..s.start]);
            out.push_str("${");
            last = s.end;
            continue;
        }
        let Some((_, v)) = point.0.iter().find(|(n, _)| *n == s.name) else {
            return Err(format!(
                "{origin}:{}:{}: `${{{}}}` uses `{}`, which is not swept: give --vary {}=FROM..TO:STEP",
                s.line, s.col, s.text, s.name, s.name
            ));
        };
        let v = match s.op {
            None => *v,
            Some(('+', n)) => v + n,
            Some(('-', n)) => v - n,
            Some((_, n)) => v * n,
        };
        out.push_str(&text[last..s.start]);
        out.push_str(&show(v));
        last = s.end;
    }
    out.push_str(&text[last..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_has_its_ends_and_its_steps() {
        let v = Vary::parse("LOAD=60..140:20").unwrap();
        assert_eq!(v.name, "LOAD");
        assert_eq!(v.values, [60.0, 80.0, 100.0, 120.0, 140.0]);
        // A step that does not land on TO stops before it; float noise
        // is rounded away.
        let v = Vary::parse("B=0.1..0.5:0.15").unwrap();
        assert_eq!(v.values, [0.1, 0.25, 0.4]);
        assert_eq!(
            Vary::parse("X=0.1..0.3:0.1").unwrap().values,
            [0.1, 0.2, 0.3]
        );
        // One value.
        assert_eq!(Vary::parse("X=3..3:1").unwrap().values, [3.0]);
    }

    #[test]
    fn a_bad_range_says_what_is_wrong() {
        for (flag, says) in [
            ("LOAD", "no `=`"),
            ("9X=1..2:1", "is not a name"),
            ("X=1..2", "no `:STEP`"),
            ("X=1-2:1", "no `FROM..TO`"),
            ("X=a..2:1", "FROM `a` is not a number"),
            ("X=1..2:0", "must be above 0"),
            ("X=1..2:-1", "must be above 0"),
            ("X=5..1:1", "inverted"),
            ("X=1..nan:1", "TO `nan` is not a number"),
            ("X=0..5000:1", "at most 1000"),
            ("X=1e300..1e300:1", "below 1e15 in size"),
            (
                "X=0.1..0.1000000015:0.0000000005",
                "below the values' precision",
            ),
        ] {
            let e = Vary::parse(flag).unwrap_err();
            assert!(e.contains(says), "{flag}: {e}");
        }
        assert!(Grid::parse(&[]).unwrap_err().contains("no --vary"));
        let three: Vec<String> = ["A=1..2:1", "B=1..2:1", "C=1..2:1"]
            .map(String::from)
            .to_vec();
        assert!(Grid::parse(&three).unwrap_err().contains("one or two"));
        let twice = ["A=1..2:1", "A=3..4:1"].map(String::from).to_vec();
        assert!(Grid::parse(&twice).unwrap_err().contains("twice"));
    }

    #[test]
    fn points_run_the_first_name_fastest() {
        let g = Grid::parse(&["L=1..3:1".into(), "T=10..20:10".into()]).unwrap();
        assert_eq!(g.len(), 6);
        let shown: Vec<String> = g.points().iter().map(|p| p.to_string()).collect();
        assert_eq!(
            shown,
            ["L=1 T=10", "L=2 T=10", "L=3 T=10", "L=1 T=20", "L=2 T=20", "L=3 T=20"]
        );
    }

    #[test]
    fn substitution_puts_values_and_offsets_in_and_names_what_is_missing() {
        let text =
            "steps:\n  - at: 0s\n    rps: ${LOAD}\n  - at: ${T + 3}s\n    rps: ${ LOAD * 2 }\n";
        assert_eq!(names_used(text, "s.yaml").unwrap(), ["LOAD", "T"]);
        let p = Point(vec![("LOAD".into(), 60.0), ("T".into(), 1.5)]);
        assert_eq!(
            substitute(text, "s.yaml", &p).unwrap(),
            "steps:\n  - at: 0s\n    rps: 60\n  - at: 4.5s\n    rps: 120\n"
        );
        let e = substitute(text, "s.yaml", &Point(vec![("LOAD".into(), 1.0)])).unwrap_err();
        assert_eq!(
            e,
            "s.yaml:4:9: `${T + 3}` uses `T`, which is not swept: give --vary T=FROM..TO:STEP"
        );
        for (bad, says) in [
            ("a: ${X\n", "1:4: `${` is not closed"),
            ("a: ${X + y}\n", "a number is wanted"),
            ("a: ${X * inf}\n", "a number is wanted"),
            ("a: ${X + NaN}\n", "a number is wanted"),
            ("a: ${1X}\n", "is not `${NAME}`"),
        ] {
            let e = names_used(bad, "s.yaml").unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        assert_eq!(show(0.05), "0.05");
        assert_eq!(show(-2.0), "-2");
    }

    #[test]
    fn an_escaped_slot_is_a_plain_dollar_brace() {
        // `$${` is written as `${` and names nothing, even unclosed.
        let text = "# $${LOAD} is swept; $${ not closed\nrps: ${LOAD}\n";
        assert_eq!(names_used(text, "s.yaml").unwrap(), ["LOAD"]);
        let p = Point(vec![("LOAD".into(), 40.0)]);
        assert_eq!(
            substitute(text, "s.yaml", &p).unwrap(),
            "# ${LOAD} is swept; ${ not closed\nrps: 40\n"
        );
        // Alone in a file, an escape uses no name.
        assert!(names_used("# $${X}\n", "s.yaml").unwrap().is_empty());
    }
}
