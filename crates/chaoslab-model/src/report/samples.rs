//! Every figure of the catalogue, sample by sample: what `--series FILE`
//! writes, and what the charts of `--html` draw.
//!
//! The JSON report's `series` carries three figures a second; a notebook
//! or a spreadsheet that wants to see *when* a queue filled or a breaker
//! opened needs all of them. So this module measures every fleet figure
//! and every service figure of [`crate::lab::figures`] over each interval
//! between the samples [`TimeSeries`](super::TimeSeries) picks (about one
//! a second, the period doubling on a long run or a large fleet so the
//! table stays under [`Samples::MAX_VALUES`] numbers), each against the
//! model of the state in force during it (one model per [`phases::cut`]
//! span, not one per row).
//!
//! One row per interval; the columns are `t_s` (seconds after the warm-up,
//! the interval's end), every fleet figure by its `path()`, then
//! `SERVICE.path` for every service and service figure, in topology
//! order. [`Samples::to_csv`] writes them as CSV (an unmeasured value is an
//! empty cell), [`Samples::to_json`] as `{"period_s", "columns", "rows"}`
//! (an unmeasured value is `null`).

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::phases;
use crate::lab::figures::{Figure, Figures, Kind, Scope};
use crate::lab::RunRecord;
use crate::metrics::Sample;
use crate::topology::model::Prediction;
use crate::topology::Topology;

/// How `--series FILE` is written, chosen by the file's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `.csv`: a header line, then a line per sample.
    Csv,
    /// `.json`: `{"period_s", "columns", "rows"}`.
    Json,
}

impl Format {
    /// The format a file's name asks for: `.csv` or `.json` (any case);
    /// anything else is a usage error, in words.
    pub fn of(path: &Path) -> Result<Format, String> {
        match path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("csv") => Ok(Format::Csv),
            Some("json") => Ok(Format::Json),
            _ => Err(format!(
                "--series {}: the file's name says how to write it: end it in .csv or .json",
                path.display()
            )),
        }
    }
}

/// One column of a [`Samples`] table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    /// The figure.
    pub figure: Figure,
    /// The service, for a per-service figure.
    pub service: Option<usize>,
}

/// Every figure of the catalogue over each sampled interval of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Samples {
    /// Seconds between rows (1, or a power of two past it).
    pub period_s: f64,
    /// The columns after `t_s`, in order.
    pub columns: Vec<Column>,
    /// The columns' names, `t_s` first.
    pub names: Vec<String>,
    /// Each row's time, seconds after the warm-up (the interval's end).
    pub t_s: Vec<f64>,
    /// The values, row by row: `t_s.len() × columns.len()`, NaN where
    /// unmeasured.
    values: Vec<f64>,
}

/// The model of one span of the run, computed once for all its rows.
struct Model {
    from: Duration,
    topology: Topology,
    prediction: Prediction,
    static_radius: usize,
}

impl Samples {
    /// At most this many numbers in the table: rows × columns.
    pub const MAX_VALUES: usize = 200_000;

    /// The columns of a topology's table, `t_s` left out.
    pub fn columns_of(t: &Topology) -> Vec<Column> {
        let fleet = Figure::of(Scope::Fleet).map(|figure| Column {
            figure,
            service: None,
        });
        let services = (0..t.services.len()).flat_map(|i| {
            Figure::of(Scope::Service).map(move |figure| Column {
                figure,
                service: Some(i),
            })
        });
        fleet.chain(services).collect()
    }

    /// The header: `t_s`, every fleet figure's path, then `SERVICE.path`
    /// per service and service figure.
    pub fn header(t: &Topology) -> Vec<String> {
        Self::names(t, &Self::columns_of(t))
    }

    /// `t_s`, then each column's name: a fleet figure's path, or
    /// `SERVICE.path`.
    fn names(t: &Topology, columns: &[Column]) -> Vec<String> {
        std::iter::once("t_s".to_string())
            .chain(columns.iter().map(|c| match c.service {
                Some(i) => format!("{}.{}", t.services[i].name, c.figure.path()),
                None => c.figure.path().to_string(),
            }))
            .collect()
    }

    /// Every figure over each interval between the samples picked from
    /// the end of the warm-up to the run's end.
    pub fn of(r: &RunRecord) -> Samples {
        Self::of_columns(r, Self::columns_of(&r.topology))
    }

    /// [`Samples::of`] with only `columns`: a chart that draws a few
    /// figures keeps a sample a second on a fleet whose whole table would
    /// be sampled far more sparsely.
    pub fn of_columns(r: &RunRecord, columns: Vec<Column>) -> Samples {
        let from = r.warmup;
        let samples: Vec<&Sample> = r.series.iter().filter(|s| s.t >= from).collect();
        let span = samples.last().map_or(from, |s| s.t).saturating_sub(from);
        let per_row = columns.len() + 1;
        let mut period = 1u64;
        // At least one row: a table wider than the bound (a mesh of
        // thousands) keeps its first and last samples.
        while period * 2 <= span.as_secs()
            && (span.as_secs() / period + 1) as usize * per_row > Self::MAX_VALUES
        {
            period *= 2;
        }
        let picked = pick(&samples, from, Duration::from_secs(period));
        let models = models(r, &samples);
        let mut out = Samples {
            period_s: period as f64,
            names: Self::names(&r.topology, &columns),
            columns,
            t_s: Vec::with_capacity(picked.len().saturating_sub(1)),
            values: Vec::with_capacity(picked.len().saturating_sub(1) * per_row),
        };
        for pair in picked.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            if b.t <= a.t {
                continue;
            }
            // The model in force at the interval's middle.
            let mid = a.t + (b.t - a.t) / 2;
            let m = &models[models.partition_point(|m| m.from <= mid).max(1) - 1];
            let latency = r.series.latency_between(a.t, b.t);
            let latency_ms = (
                latency.quantile_ms(0.5).unwrap_or(0.0),
                latency.quantile_ms(0.99).unwrap_or(0.0),
            );
            let mut w = super::window(r, (a, b), (&m.prediction, m.static_radius), latency_ms);
            w.topology = &m.topology;
            let fleet = Figures::measure(&w, Scope::Fleet, 0);
            out.t_s
                .push(round(b.t.saturating_sub(from).as_secs_f64(), 1e6));
            let mut service: Option<(usize, Figures)> = None;
            for c in &out.columns {
                let v = match c.service {
                    None => fleet[c.figure],
                    Some(i) => {
                        if service.as_ref().is_none_or(|(j, _)| *j != i) {
                            service = Some((i, Figures::measure(&w, Scope::Service, i)));
                        }
                        service.as_ref().expect("just measured").1[c.figure]
                    }
                };
                out.values.push(v);
            }
        }
        out
    }

    /// Row `i`'s values, in the order of [`Samples::columns`].
    pub fn row(&self, i: usize) -> &[f64] {
        let n = self.columns.len();
        &self.values[i * n..(i + 1) * n]
    }

    /// How many rows.
    pub fn len(&self) -> usize {
        self.t_s.len()
    }

    /// Whether there is no row (a run shorter than two samples).
    pub fn is_empty(&self) -> bool {
        self.t_s.is_empty()
    }

    /// One column over time: a fleet figure (`service` `None`) or a
    /// service's; `None` when the table has no such column.
    pub fn column(&self, figure: Figure, service: Option<usize>) -> Option<Vec<f64>> {
        let k = self
            .columns
            .iter()
            .position(|c| c.figure == figure && c.service == service)?;
        Some((0..self.len()).map(|i| self.row(i)[k]).collect())
    }

    /// The table as CSV: a header line, then a line per row; an
    /// unmeasured value is an empty cell, a name with a comma or a quote
    /// is quoted.
    pub fn to_csv(&self) -> String {
        let mut out = String::new();
        let header: Vec<String> = self.names.iter().map(|n| csv_field(n)).collect();
        out.push_str(&header.join(","));
        out.push('\n');
        for (i, t) in self.t_s.iter().enumerate() {
            let _ = write!(out, "{t}");
            for (c, &v) in self.columns.iter().zip(self.row(i)) {
                out.push(',');
                if let Some(v) = value(c.figure, v) {
                    let _ = write!(out, "{v}");
                }
            }
            out.push('\n');
        }
        out
    }

    /// The table as JSON: `{"period_s": 1, "columns": ["t_s", ...],
    /// "rows": [[0.5, ...], ...]}`; an unmeasured value is `null`.
    pub fn to_json(&self) -> String {
        let rows: Vec<Value> = self
            .t_s
            .iter()
            .enumerate()
            .map(|(i, &t)| {
                Value::Array(
                    std::iter::once(number(t))
                        .chain(
                            self.columns
                                .iter()
                                .zip(self.row(i))
                                .map(|(c, &v)| value(c.figure, v).map_or(Value::Null, number)),
                        )
                        .collect(),
                )
            })
            .collect();
        let doc = serde_json::json!({
            "period_s": self.period_s,
            "columns": self.names,
            "rows": rows,
        });
        serde_json::to_string(&doc).expect("a table always serialises")
    }

    /// The text `--series` writes in `format`.
    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Csv => self.to_csv(),
            Format::Json => self.to_json(),
        }
    }
}

/// The first sample at or after each boundary `from`, `from + step`, …
/// (as the report's per-second series picks them).
fn pick<'a>(samples: &[&'a Sample], from: Duration, step: Duration) -> Vec<&'a Sample> {
    let mut picked = Vec::new();
    let mut next = from;
    for &s in samples {
        if s.t >= next {
            picked.push(s);
            while next <= s.t {
                next += step;
            }
        }
    }
    picked
}

/// The model of each span the run is cut into at the changes of what the
/// model is told, told the span's measured attempt latencies.
fn models(r: &RunRecord, samples: &[&Sample]) -> Vec<Model> {
    phases::cut(&r.start, &r.events, r.warmup, Duration::MAX)
        .into_iter()
        .map(|s| {
            let first = samples.get(samples.partition_point(|x| x.t < s.from));
            let last = samples[..samples.partition_point(|x| x.t <= s.to)].last();
            let counts = match (first, last) {
                (Some(a), Some(b)) if b.t > a.t => Some(b.counts.since(&a.counts)),
                _ => None,
            };
            let (prediction, static_radius) = r.model_measured(&s.state, counts.as_ref());
            Model {
                from: s.from,
                topology: s.state.applied_to(&r.topology),
                prediction,
                static_radius,
            }
        })
        .collect()
}

/// A value as written: a count as a whole number, a real to six
/// decimals; `None` when unmeasured (NaN or infinite).
fn value(f: Figure, v: f64) -> Option<f64> {
    if !v.is_finite() {
        return None;
    }
    Some(match f.kind() {
        Kind::Count => v.round().max(0.0),
        Kind::Real => round(v, 1e6),
    })
}

fn round(v: f64, scale: f64) -> f64 {
    (v * scale).round() / scale
}

fn number(v: f64) -> Value {
    serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
}

/// A CSV field, quoted when it holds a comma, a quote or a line break.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The columns of a series as a Markdown table, for `docs/reports.md`:
/// each fleet figure, then each service figure under `SERVICE.`.
pub fn markdown_columns() -> String {
    let mut out = String::from("| column | unit | what it is |\n|---|---|---|\n");
    out.push_str("| `t_s` | s | The end of the sample's interval, seconds after the warm-up |\n");
    for f in Figure::of(Scope::Fleet).chain(Figure::of(Scope::Service)) {
        let name = match f.scope() {
            Scope::Fleet => f.path().to_string(),
            Scope::Service => format!("SERVICE.{}", f.path()),
        };
        let _ = writeln!(
            out,
            "| `{name}` | {} | {} |",
            f.unit(),
            f.help().replace('|', "\\|")
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docs_list_every_column_of_a_series() {
        crate::docs::check_block("docs/reports.md", "series-columns", &markdown_columns());
    }

    fn table() -> Samples {
        let columns = vec![
            Column {
                figure: Figure::RootRequests,
                service: None,
            },
            Column {
                figure: Figure::RootAvailability,
                service: None,
            },
            Column {
                figure: Figure::Amplification,
                service: Some(0),
            },
        ];
        Samples {
            period_s: 1.0,
            names: vec![
                "t_s".into(),
                "root.requests".into(),
                "root.availability".into(),
                "B,\"x\".amplification".into(),
            ],
            columns,
            t_s: vec![1.0, 2.0],
            values: vec![200.4, 0.995, 1.1234567, 0.0, f64::NAN, 8.0],
        }
    }

    #[test]
    fn csv_has_the_header_a_line_per_row_and_empty_cells_for_nan() {
        let csv = table().to_csv();
        assert_eq!(
            csv,
            "t_s,root.requests,root.availability,\"B,\"\"x\"\".amplification\"\n\
             1,200,0.995,1.123457\n\
             2,0,,8\n"
        );
    }

    #[test]
    fn json_has_the_columns_a_row_per_sample_and_null_for_nan() {
        let v: Value = serde_json::from_str(&table().to_json()).unwrap();
        assert_eq!(v["period_s"], 1.0);
        assert_eq!(v["columns"][3], "B,\"x\".amplification");
        assert_eq!(v["rows"].as_array().unwrap().len(), 2);
        assert_eq!(
            v["rows"][0],
            serde_json::json!([1.0, 200.0, 0.995, 1.123457])
        );
        assert_eq!(v["rows"][1][2], Value::Null);
    }

    #[test]
    fn the_format_comes_from_the_name() {
        assert_eq!(Format::of(Path::new("a/s.csv")), Ok(Format::Csv));
        assert_eq!(Format::of(Path::new("s.JSON")), Ok(Format::Json));
        for bad in ["s.txt", "s", "csv"] {
            let e = Format::of(Path::new(bad)).unwrap_err();
            assert!(e.contains(".csv or .json"), "{e}");
        }
    }

    #[test]
    fn the_header_is_the_catalogue_in_topology_order() {
        let t = Topology::from_yaml(
            "name: t\nload: {entry: A, rps: 10}\nservices:\n  A: {calls: [B]}\n  B: {}\n",
            "t.yaml",
        )
        .unwrap();
        let h = Samples::header(&t);
        let fleet = Figure::of(Scope::Fleet).count();
        let service = Figure::of(Scope::Service).count();
        assert_eq!(h.len(), 1 + fleet + 2 * service);
        assert_eq!(h[0], "t_s");
        assert_eq!(h[1], Figure::of(Scope::Fleet).next().unwrap().path());
        assert_eq!(h[1 + fleet], "A.rps");
        assert_eq!(h[1 + fleet + service], "B.rps");
    }
}
