//! Tests of `export`.

use super::*;

#[test]
fn the_axolotl_yaml_values_are_read_as_overbrainer_writes_them() {
    let yaml = "base_model: \"/m/tiny\"\nsequence_len: 256\ndatasets:\n  - path: x\n";
    assert_eq!(
        yaml_value(yaml, "base_model"),
        Some(serde_json::Value::String("/m/tiny".into()))
    );
    assert_eq!(
        yaml_value(yaml, "sequence_len").and_then(|v| v.as_u64()),
        Some(256)
    );
    assert_eq!(yaml_value(yaml, "missing"), None);
}

#[test]
fn an_invalid_quantize_type_is_refused_naming_the_flag_and_key() {
    let settings = Settings::default();
    let request = Request {
        run_id: "r".into(),
        quantize: Some("Q9_X".into()),
        ollama: None,
        target: None,
    };
    let error = quantize_type(&request, &settings).unwrap_err().to_string();
    assert!(
        error.contains("`Q9_X`") && error.contains("--quantize"),
        "{error}"
    );
    assert_eq!(
        quantize_type(&Request::default(), &settings).unwrap(),
        "Q4_K_M"
    );
}
