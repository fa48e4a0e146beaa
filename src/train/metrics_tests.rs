//! Tests of `train::metrics`.

use super::*;

fn line(text: &str) -> MetricLine {
    match MetricReader::new().parse(text) {
        Parsed::Line(line) => line,
        other => panic!("{other:?}"),
    }
}

#[test]
fn parses_every_kind() {
    assert_eq!(
        line(r#"{"kind":"stage","stage":"merge","ts":1}"#),
        MetricLine::Stage {
            ts: 1.0,
            stage: Stage::Merge
        }
    );
    let MetricLine::Train(train) = line(
        r#"{"kind": "train", "ts": 1.5, "step": 3, "max_steps": 10, "epoch": 0.05, "loss": 6.2, "learning_rate": 0.001, "grad_norm": null}"#,
    ) else {
        panic!()
    };
    assert_eq!((train.step, train.max_steps), (3, Some(10)));
    assert_eq!(train.loss, Some(Value(6.2)));
    assert_eq!(train.grad_norm, None);
    let MetricLine::Eval(eval) =
        line(r#"{"kind":"eval","ts":1,"step":5,"eval_loss":6.1,"eval_ppl":480.5}"#)
    else {
        panic!()
    };
    assert_eq!(eval.eval_loss, Some(Value(6.1)));
    assert_eq!(eval.other.get("eval_ppl"), Some(&serde_json::json!(480.5)));
    assert_eq!(
        line(r#"{"kind":"eval_progress","ts":1,"step":2,"total":null}"#),
        MetricLine::EvalProgress {
            ts: 1.0,
            step: 2,
            total: None
        }
    );
    assert_eq!(
        line(r#"{"kind":"snapshot","ts":1,"step":4,"checkpoint":"checkpoint-4"}"#),
        MetricLine::Snapshot {
            ts: 1.0,
            step: 4,
            checkpoint: "checkpoint-4".into(),
            reason: None,
        }
    );
    assert_eq!(
        line(r#"{"kind":"snapshot","ts":1,"step":4,"checkpoint":"checkpoint-4","reason":"cost"}"#),
        MetricLine::Snapshot {
            ts: 1.0,
            step: 4,
            checkpoint: "checkpoint-4".into(),
            reason: Some("cost".into()),
        }
    );
}

#[test]
fn nan_and_inf_are_kept() {
    let MetricLine::Train(train) = line(
        r#"{"kind":"train","ts":1,"step":1,"loss":"nan","grad_norm":"inf","learning_rate":"-inf"}"#,
    ) else {
        panic!()
    };
    assert!(train.loss.unwrap().0.is_nan());
    assert_eq!(train.grad_norm, Some(Value(f64::INFINITY)));
    assert_eq!(train.learning_rate, Some(Value(f64::NEG_INFINITY)));
}

#[test]
fn python_style_non_finite_numbers_are_read_and_flagged_not_dropped() {
    let mut reader = MetricReader::new();
    let Parsed::Flagged(MetricLine::Train(train), warning) = reader.parse(
            r#"{"kind": "train", "ts": 1, "step": 1, "loss": NaN, "grad_norm": Infinity, "learning_rate": -Infinity}"#,
        ) else {
            panic!("not flagged")
        };
    assert!(train.loss.unwrap().0.is_nan());
    assert_eq!(train.grad_norm, Some(Value(f64::INFINITY)));
    assert_eq!(train.learning_rate, Some(Value(f64::NEG_INFINITY)));
    assert!(warning.contains("line 1"), "{warning}");
    for token in ["`NaN`", "`Infinity`", "`-Infinity`"] {
        assert!(warning.contains(token), "{token}: {warning}");
    }
    // Each token is flagged once per reader; the values are still read.
    let Parsed::Line(MetricLine::Train(again)) =
        reader.parse(r#"{"kind":"train","ts":2,"step":2,"loss":NaN}"#)
    else {
        panic!("not read")
    };
    assert!(again.loss.unwrap().0.is_nan());
    // Tokens inside strings are text, not numbers.
    let MetricLine::Eval(eval) = line(
        r#"{"kind":"eval","ts":1,"step":5,"eval_loss":1.5,"eval_note":"NaN or Infinity \" NaN"}"#,
    ) else {
        panic!()
    };
    assert_eq!(
        eval.other.get("eval_note"),
        Some(&serde_json::json!("NaN or Infinity \" NaN"))
    );
    // A bare token in a field that must be an integer skips the line, with a warning.
    assert!(matches!(
        reader.parse(r#"{"kind":"end","ts":1,"step":NaN}"#),
        Parsed::Skipped(Some(w)) if w.contains("line 3") && w.contains("bad `end` line")
    ));
    assert!(matches!(
        MetricReader::new().parse_last(br#"{"kind":"end","ts":1,"step":4,"x":NaN}"#),
        Parsed::Flagged(MetricLine::End { step: 4, .. }, _)
    ));
}

#[test]
fn a_leading_byte_order_mark_loses_no_metric_line() {
    let mut reader = MetricReader::new();
    assert!(matches!(
        reader.parse("\u{feff}{\"kind\":\"stage\",\"stage\":\"train\",\"ts\":1}"),
        Parsed::Line(MetricLine::Stage {
            stage: Stage::Train,
            ..
        })
    ));
    assert!(matches!(
        reader.parse_last("\u{feff}{\"kind\":\"end\",\"ts\":1,\"step\":2}".as_bytes()),
        Parsed::Line(MetricLine::End { step: 2, .. })
    ));
}

#[test]
fn unknown_kinds_warn_once_and_bad_lines_are_skipped() {
    let mut reader = MetricReader::new();
    assert!(matches!(
        reader.parse(r#"{"kind":"future","ts":1}"#),
        Parsed::Skipped(Some(w)) if w.contains("unknown kind `future`")
    ));
    assert_eq!(
        reader.parse(r#"{"kind":"future","ts":2}"#),
        Parsed::Skipped(None)
    );
    assert!(matches!(
        reader.parse("{not json"),
        Parsed::Skipped(Some(w)) if w.contains("line 3")
    ));
    assert!(matches!(
        reader.parse(r#"{"kind":"train","ts":1}"#),
        Parsed::Skipped(Some(w)) if w.contains("bad `train` line")
    ));
    assert!(matches!(
        reader.parse(r#"{"kind":"end","ts":1,"step":9}"#),
        Parsed::Line(MetricLine::End { step: 9, .. })
    ));
}

#[test]
fn last_line_without_break_is_kept_and_torn_one_skipped() {
    let mut reader = MetricReader::new();
    assert!(matches!(
        reader.parse_last(br#"{"kind":"end","ts":1,"step":9}"#),
        Parsed::Line(_)
    ));
    assert!(matches!(
        reader.parse_last(br#"{"kind":"end","ts":1,"st"#),
        Parsed::Skipped(Some(w)) if w.contains("torn")
    ));
    assert_eq!(reader.parse_last(b"  "), Parsed::Skipped(None));
}

#[test]
fn summary_follows_the_lines() {
    let mut summary = Summary::default();
    summary.observe(&line(r#"{"kind":"stage","stage":"train","ts":1}"#));
    assert!(!summary.plugin_seen);
    summary.observe(&line(
        r#"{"kind":"train","ts":1,"step":2,"max_steps":10,"epoch":0.5,"loss":3.0}"#,
    ));
    summary.observe(&line(r#"{"kind":"eval","ts":1,"step":2,"eval_loss":2.5}"#));
    summary.observe(&line(
        r#"{"kind":"snapshot","ts":1,"step":2,"checkpoint":"checkpoint-2"}"#,
    ));
    assert!(summary.plugin_seen);
    assert_eq!(summary.max_steps, Some(10));
    assert_eq!(summary.last_step, Some(2));
    assert_eq!(summary.last_loss, Some(3.0));
    assert_eq!(summary.last_eval_loss, Some(2.5));
    assert_eq!(summary.snapshot, Some((2, "checkpoint-2".into())));
    assert_eq!(summary.last_stage, Some(Stage::Train));
    summary.observe(&line(r#"{"kind":"stage","stage":"merge","ts":2}"#));
    assert_eq!(summary.last_stage, Some(Stage::Merge));
}

#[test]
fn stage_names_are_what_the_reader_reads() {
    for stage in [Stage::Train, Stage::Merge, Stage::Export] {
        let text = format!(r#"{{"kind":"stage","stage":"{}","ts":1}}"#, stage.name());
        assert_eq!(
            serde_json::from_str::<MetricLine>(&text).unwrap(),
            MetricLine::Stage { ts: 1.0, stage }
        );
    }
}
