//! The emitter checked against PyYAML itself, and the mapping's merge.

#![allow(
    clippy::disallowed_methods,
    reason = "tests run real programs and read the test environment"
)]

use super::emit::float;
use super::*;
use rand::{Rng, SeedableRng};
use std::io::Write;
use std::process::{Command, Stdio};

/// Loads `document` with PyYAML's `safe_load` and returns it as JSON where every
/// float is `{"float_bits": <u64>}`, so floats compare bit for bit, and every NaN
/// `{"float_bits": "nan"}`.
fn pyyaml(document: &str) -> serde_json::Value {
    let script = r#"
import json, struct, sys, yaml
def walk(v):
    if isinstance(v, float) and v != v:
        return {"float_bits": "nan"}
    if isinstance(v, float):
        return {"float_bits": struct.unpack("<Q", struct.pack("<d", v))[0]}
    if isinstance(v, dict):
        return {k: walk(x) for k, x in v.items()}
    if isinstance(v, list):
        return [walk(x) for x in v]
    return v
print(json.dumps(walk(yaml.safe_load(sys.stdin.buffer.read().decode("utf-8")))))
"#;
    let mut child = Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 with PyYAML (apt-get install python3-yaml)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(document.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "PyYAML failed on:\n{document}");
    serde_json::from_slice(&output.stdout).unwrap()
}

fn expected(value: &Yaml) -> serde_json::Value {
    match value {
        Yaml::Null => serde_json::Value::Null,
        Yaml::Bool(b) => (*b).into(),
        Yaml::Int(i) => (*i).into(),
        Yaml::Float(f) if f.is_nan() => serde_json::json!({ "float_bits": "nan" }),
        Yaml::Float(f) => serde_json::json!({ "float_bits": f.to_bits() }),
        Yaml::Str(s) => s.clone().into(),
        Yaml::Seq(items) => items.iter().map(expected).collect(),
        Yaml::Map(mapping) => mapping
            .iter()
            .map(|(k, v)| (k.to_owned(), expected(v)))
            .collect::<serde_json::Map<_, _>>()
            .into(),
    }
}

/// Asserts equal documents, naming each top-level key whose value differs.
fn assert_same(got: &serde_json::Value, want: &serde_json::Value, text: &str) {
    let (Some(got_map), Some(want_map)) = (got.as_object(), want.as_object()) else {
        panic!("not a mapping: {got}");
    };
    let differing: Vec<String> = want_map
        .iter()
        .filter(|(k, v)| got_map.get(*k) != Some(*v))
        .map(|(k, v)| format!("{k:?}: want {v}, got {:?}", got_map.get(k)))
        .collect();
    assert!(differing.is_empty(), "{differing:#?}\n{text}");
    assert_eq!(got_map.len(), want_map.len(), "{text}");
}

fn tricky_strings() -> Vec<&'static str> {
    vec![
        "yes",
        "Yes",
        "YES",
        "no",
        "on",
        "off",
        "On",
        "y",
        "Y",
        "n",
        "NO",
        "true",
        "False",
        "null",
        "Null",
        "~",
        "",
        "012",
        "0x1F",
        "0o17",
        "0b101",
        "1_000",
        "1:30",
        "190:20:30",
        "1e-4",
        "1.0e-4",
        "+1",
        "-1",
        ".5",
        ".inf",
        ".NaN",
        "2024-01-01",
        "2001-12-14t21:59:43.10-05:00",
        "=",
        "<<",
        "a: b",
        "a #b",
        "#x",
        "- a",
        "? x",
        "[x]",
        "{x}",
        "*a",
        "&a",
        "!tag",
        "|",
        ">",
        "%x",
        "@x",
        "`x`",
        "'q'",
        "\"dq\"",
        "back\\slash",
        "line\nbreak",
        "cr\rlf\r\n",
        "tab\there",
        " lead",
        "trail ",
        "ünïcode ☃ 日本",
        "emoji 🎉",
        "nel\u{85}x",
        "ls\u{2028}x",
        "ps\u{2029}x",
        "bell\u{7}",
        "del\u{7f}",
        "c1\u{9b}",
        "bom\u{feff}",
        "nul\0x",
        "./output",
        "/abs/path",
        "adamw_torch",
        "chat_template",
        "tokenizer_default",
    ]
}

#[test]
fn pyyaml_reads_back_exactly_what_we_meant() {
    let mut document = Mapping::new();
    for (index, text) in tricky_strings().into_iter().enumerate() {
        // Each string is a key too, so keys are checked the same way.
        document.insert(format!("s{index}"), Yaml::from(text));
        document.insert(text, Yaml::Int(i64::try_from(index).unwrap()));
    }
    let floats = [
        1e-4,
        2e-4,
        1e-7,
        0.1,
        0.05,
        1e22,
        1e300,
        5e-324,
        -0.0,
        0.0,
        3.0,
        -2.5,
        f64::MAX,
        f64::MIN_POSITIVE,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
    ];
    document.insert(
        "floats",
        Yaml::Seq(floats.iter().map(|f| Yaml::Float(*f)).collect()),
    );
    document.insert(
        "ints",
        Yaml::Seq(vec![Yaml::Int(i64::MIN), Yaml::Int(0), Yaml::Int(i64::MAX)]),
    );
    document.insert("nothing", Yaml::Null);
    document.insert("yes_bool", Yaml::Bool(true));
    document.insert("empty_map", Yaml::Map(Mapping::new()));
    document.insert("empty_seq", Yaml::Seq(vec![]));
    let mut entry = Mapping::new();
    entry.insert("path", Yaml::from("./train.jsonl"));
    entry.insert("type", Yaml::from("chat_template"));
    entry.insert(
        "roles",
        Yaml::Seq(vec![Yaml::from("on"), Yaml::Seq(vec![Yaml::Int(1)])]),
    );
    entry.insert(
        "nested",
        Yaml::Map([("k".to_owned(), Yaml::from("v: w"))].into_iter().collect()),
    );
    document.insert(
        "datasets",
        Yaml::Seq(vec![Yaml::Map(entry.clone()), Yaml::Map(entry)]),
    );
    let text = to_string(&document);
    assert_same(&pyyaml(&text), &expected(&Yaml::Map(document)), &text);
}

#[test]
fn pyyaml_reads_back_random_unicode_strings() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut document = Mapping::new();
    for index in 0..400 {
        let len = rng.random_range(0..24);
        let text: String = (0..len)
            .map(|_| {
                loop {
                    let code = match rng.random_range(0..4) {
                        0 => rng.random_range(0..0x80),
                        1 => rng.random_range(0x80..0x800),
                        2 => rng.random_range(0x800..0x1_0000),
                        _ => rng.random_range(0x1_0000..0x11_0000),
                    };
                    if let Some(c) = char::from_u32(code) {
                        break c;
                    }
                }
            })
            .collect();
        document.insert(format!("k{index}"), Yaml::Str(text));
    }
    let text = to_string(&document);
    assert_same(&pyyaml(&text), &expected(&Yaml::Map(document)), &text);
}

#[test]
fn floats_have_a_dot_and_no_exponent() {
    assert_eq!(float(1e-4), "0.0001");
    assert_eq!(float(1e22), "10000000000000000000000.0");
    assert_eq!(float(2.0), "2.0");
    assert_eq!(float(f64::NEG_INFINITY), "-.inf");
}

#[test]
fn layout_is_block_style() {
    let mut document = Mapping::new();
    document.insert("base_model", Yaml::from("/m"));
    let mut entry = Mapping::new();
    entry.insert("path", Yaml::from("train.jsonl"));
    entry.insert("type", Yaml::from("chat_template"));
    document.insert("datasets", Yaml::Seq(vec![Yaml::Map(entry)]));
    document.insert("plugins", Yaml::Seq(vec![Yaml::from("a.B")]));
    assert_eq!(
        to_string(&document),
        "base_model: \"/m\"\ndatasets:\n  - path: train.jsonl\n    type: chat_template\nplugins:\n  - a.B\n"
    );
}

#[test]
fn merge_is_recursive_for_tables_only() {
    let mut ours: Mapping = [
        ("a".to_owned(), Yaml::Int(1)),
        (
            "t".to_owned(),
            Yaml::Map(
                [
                    ("x".to_owned(), Yaml::Int(1)),
                    ("y".to_owned(), Yaml::Int(2)),
                ]
                .into_iter()
                .collect(),
            ),
        ),
    ]
    .into_iter()
    .collect();
    let theirs: Mapping = [
        (
            "t".to_owned(),
            Yaml::Map([("y".to_owned(), Yaml::Int(3))].into_iter().collect()),
        ),
        ("a".to_owned(), Yaml::Seq(vec![])),
        ("b".to_owned(), Yaml::Null),
    ]
    .into_iter()
    .collect();
    ours.merge(theirs);
    assert_eq!(ours.get("a"), Some(&Yaml::Seq(vec![])));
    let Some(Yaml::Map(t)) = ours.get("t") else {
        panic!()
    };
    assert_eq!(t.get("x"), Some(&Yaml::Int(1)));
    assert_eq!(t.get("y"), Some(&Yaml::Int(3)));
    assert_eq!(ours.get("b"), Some(&Yaml::Null));
}
