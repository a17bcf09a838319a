use super::*;

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Scalars {
    #[serde(default, deserialize_with = "rate")]
    error_rate: Option<f64>,
    #[serde(default, deserialize_with = "rps")]
    rps: Option<f64>,
    #[serde(default, deserialize_with = "capacity")]
    capacity: Option<f64>,
    #[serde(default, deserialize_with = "non_negative")]
    min_per_sec: Option<f64>,
    #[serde(default, deserialize_with = "status")]
    status: Option<u16>,
    #[serde(default, deserialize_with = "duration")]
    latency: Option<Duration>,
}

fn err(yaml: &str) -> String {
    match from_str::<Scalars>(yaml, "x.yaml") {
        Ok(s) => panic!("accepted: {s:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn durations() {
    assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
    assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
    assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
    assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
    assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
    assert_eq!(parse_duration("0ms"), Ok(Duration::ZERO));
    assert!(parse_duration("-1s").unwrap_err().contains("negative"));
    assert!(parse_duration("10 parsecs").is_err());
    assert!(parse_duration("fast").is_err());
}

#[test]
fn scalars_parse_and_errors_point_at_the_value() {
    let s: Scalars = from_str(
        "error_rate: 1\nrps: 2.5\ncapacity: 7\nmin_per_sec: 0\nstatus: 503\nlatency: 20ms\n",
        "x.yaml",
    )
    .unwrap();
    assert_eq!(s.error_rate, Some(1.0));
    assert_eq!(
        (s.rps, s.capacity, s.min_per_sec),
        (Some(2.5), Some(7.0), Some(0.0))
    );
    assert_eq!(s.status, Some(503));
    assert_eq!(s.latency, Some(Duration::from_millis(20)));
    assert_eq!(
            err("rps: 1\nerror_rate: 1.5\n"),
            "x.yaml:2:13: error_rate: error_rate must be a rate between 0 and 1 (e.g. 0.1 for 10%), got 1.5"
        );
    assert_eq!(
            err("capacity: -3\n"),
            "x.yaml:1:11: capacity: capacity must be a positive, finite number of requests per second, got -3"
        );
    assert_eq!(
        err("status: 99.5\n"),
        "x.yaml:1:9: status: status must be a whole number from 100 to 599, got 99.5"
    );
    assert_eq!(
        err("min_per_sec: -1\n"),
        "x.yaml:1:14: min_per_sec: must be a finite number of 0 or more, got -1"
    );
    assert_eq!(
        err("latency: -5ms\n"),
        "x.yaml:1:10: latency: `-5ms` is negative: a duration must be 0 or more"
    );
}

#[test]
fn numbers_say_what_they_needed_instead_of_a_word_a_bool_or_nothing() {
    assert!(err("rps: fast\n")
        .ends_with("rps: rps needs a positive number of requests per second, not `fast`"));
    assert!(err("status:\n").ends_with("status needs an HTTP status code, but nothing is given"));
    assert!(
        err("error_rate: true\n").ends_with("error_rate needs a rate between 0 and 1, not `true`")
    );
    assert!(err("min_per_sec: x\n").ends_with("min_per_sec: needs a number of 0 or more, not `x`"));
}

#[test]
fn errors_carry_the_file_line_and_column_once() {
    let e = from_str::<Scalars>("rps: 1\n  status: [\n", "x.yaml").unwrap_err();
    assert_eq!(e.at.file, "x.yaml");
    assert!(e.at.line.is_some() && e.at.column.is_some(), "{e:?}");
    assert!(!e.message.contains(" at line "), "{e:?}");
    let e = from_str::<Scalars>("stauts: 500\n", "x.yaml").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("x.yaml:1:1: unknown field `stauts`"),
        "{e}"
    );
    let v: Value = from_str("a: { b: 1 }\n", "v.yaml").unwrap();
    assert_eq!(v["a"]["b"].as_u64(), Some(1));
}

#[test]
fn content_and_locations() {
    assert!(!has_content("# only\n---\n\n...\n"));
    assert!(has_content("# c\nname: t\n"));
    assert_eq!(Location::at("f", 0, 4).to_string(), "f:1:5");
    assert_eq!(Location::in_file("f").to_string(), "f");
}

#[test]
fn near_misses() {
    assert_eq!(edit_distance("cart", "carts"), 1);
    assert_eq!(edit_distance("RPS", "rps"), 0);
    assert_eq!(edit_distance("rsp", "rps"), 1);
    assert_eq!(edit_distance("a", "abcdefg"), usize::MAX);
    assert_eq!(did_you_mean("carts", ["cart", "carts-v2"]), Some("cart"));
    assert_eq!(did_you_mean("X", ["A", "B"]), None);
    assert_eq!(
        did_you_mean("amplificaton", ["rps", "amplification"]),
        Some("amplification")
    );
    assert_eq!(
        did_you_mean("happiness", ["rps", "errors", "requests"]),
        None
    );
}

#[test]
fn keys_and_tokens() {
    assert_eq!(key_of("  services:"), Some("services"));
    assert_eq!(key_of("A: { calls: [B] }"), Some("A"));
    assert_eq!(key_of("\"a: b\": {}"), Some("a: b"));
    assert_eq!(key_of("- at: 1s"), Some("at"));
    assert_eq!(key_of("http://x"), None);
    assert_eq!(find_token("calls: [B, BB]", "BB", 0), Some(11));
    assert_eq!(find_token("calls: [B]  # B again", "B", 9), None);
    assert_eq!(find_token("# entry: x", "entry:", 0), None);
}

#[test]
fn blocks_entries_and_keys() {
    let text = "name: t\nservices:\n  A: { calls: [B] }\n  # B is last\n  B:\n    work: 1ms\nsteps:\n- at: 1s\n  heal: B\n- at: 2s\n  heal: X  # oops\nload: { entry: Z }\n";
    let l = Lines::new(text, "t.yaml");
    let services = l.find_key(0..l.len(), "services").unwrap();
    assert_eq!(services, 1);
    assert_eq!(l.block(services), 2..6);
    assert_eq!(l.entries(l.block(services)), vec![2, 4]);
    let steps = l.find_key(0..l.len(), "steps").unwrap();
    assert_eq!(l.block(steps), 7..11);
    assert_eq!(l.entries(l.block(steps)), vec![7, 9]);
    assert_eq!(l.find(9..11, "X", 0).unwrap().to_string(), "t.yaml:11:9");
    assert_eq!(l.find(2..3, "B", 3).unwrap().to_string(), "t.yaml:3:16");
    assert_eq!(l.key("entry").unwrap().to_string(), "t.yaml:12:9");
    assert_eq!(l.key("nothing"), None);
    assert_eq!(l.find_key(0..l.len(), "at"), None);
}
