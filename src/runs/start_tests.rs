//! Tests of `runs::start`.

use super::*;

#[test]
fn container_names_carry_a_random_suffix_so_equal_run_ids_do_not_collide() {
    let suffixes: std::collections::BTreeSet<String> =
        (0..64).map(|_| container_suffix()).collect();
    assert!(suffixes.len() > 60, "{suffixes:?}");
    for suffix in &suffixes {
        assert!(
            suffix.len() == 8 && suffix.chars().all(|c| c.is_ascii_hexdigit()),
            "{suffix}"
        );
    }
    let mut a = crate::runs::record::fixture("demo_20260922-143005", State::Running);
    let mut b = a.clone();
    a.container_suffix = Some("0a1b2c3d".to_owned());
    b.container_suffix = Some("4e5f6a7b".to_owned());
    let runtime = crate::exec::JobRuntime::Container {
        engine: crate::config::Engine::Docker,
        image: "img".to_owned(),
        tools_cache: None,
    };
    let dir = tempfile::tempdir().unwrap();
    let executor =
        crate::exec::AnyExecutor::Local(crate::exec::LocalExecutor::new(dir.path()).unwrap());
    let name = |record: &RunRecord| {
        crate::runs::target::job_spec(record, &executor, &runtime, &[]).container_name()
    };
    assert_eq!(name(&a), "overbrainer-demo_20260922-143005-0a1b2c3d");
    assert_ne!(name(&a), name(&b));
    // The record keeps the suffix; an older record without one reads as before.
    let text = serde_json::to_string(&a).unwrap();
    assert!(text.contains("\"container_suffix\":\"0a1b2c3d\""), "{text}");
    let mut old: serde_json::Value = serde_json::from_str(&text).unwrap();
    old.as_object_mut().unwrap().remove("container_suffix");
    let old: RunRecord = serde_json::from_value(old).unwrap();
    assert_eq!(old.container_suffix, None);
    assert_eq!(name(&old), "overbrainer-demo_20260922-143005");
}

#[test]
fn regression_a_data_file_of_blank_lines_or_a_byte_order_mark_alone_holds_no_record() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[u8], bool); 7] = [
        (b"", false),
        (b"\xef\xbb\xbf", false),
        (b"\n\n  \n", false),
        (b"\xef\xbb\xbf\n\t\r\n", false),
        (b"{}", true),
        (b"\xef\xbb\xbf{\"messages\": []}\n", true),
        (b"\n\n{\"messages\": []}", true),
    ];
    for (index, (bytes, holds)) in cases.iter().enumerate() {
        let path = dir.path().join(format!("{index}.jsonl"));
        std::fs::write(&path, bytes).unwrap();
        assert_eq!(non_empty(&path), *holds, "{bytes:?}");
    }
    assert!(!non_empty(&dir.path().join("missing.jsonl")));
    assert!(!non_empty(dir.path()));
}
