//! The base model's shape for the VRAM estimate (POD-18): `hidden_size`,
//! `num_hidden_layers` and `vocab_size` from `config.json`, the parameter count from the
//! `safetensors` metadata: from a model directory on this machine (each `.safetensors`
//! header), or from the Hugging Face Hub (`GET /api/models/{repo}`'s `safetensors.total`
//! and `resolve/main/config.json`, with the token when one is set).

use std::io::Read as _;
use std::path::Path;
use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};

use super::vram::Shape;

/// A `safetensors` header larger than this is not read (the format caps it at 100 MB).
const HEADER_LIMIT: u64 = 100_000_000;

/// The three numbers of `config.json` (top level, or under `text_config` for models
/// that nest their language model).
fn config_numbers(config: &serde_json::Value) -> Result<(u64, u64, u64), String> {
    let get = |key: &str| {
        config[key]
            .as_u64()
            .or_else(|| config["text_config"][key].as_u64())
            .filter(|n| *n > 0)
            .ok_or_else(|| format!("`config.json` has no `{key}`"))
    };
    Ok((
        get("hidden_size")?,
        get("num_hidden_layers")?,
        get("vocab_size")?,
    ))
}

/// The parameters one `safetensors` file holds, from its header.
fn file_parameters(path: &Path) -> Result<u64, String> {
    let show = || path.display().to_string();
    let mut file = std::fs::File::open(path).map_err(|e| format!("`{}`: {e}", show()))?;
    let mut size = [0_u8; 8];
    file.read_exact(&mut size)
        .map_err(|e| format!("`{}`: {e}", show()))?;
    let size = u64::from_le_bytes(size);
    if size > HEADER_LIMIT {
        return Err(format!("`{}`: a header of {size} bytes", show()));
    }
    let mut header = Vec::new();
    file.take(size)
        .read_to_end(&mut header)
        .map_err(|e| format!("`{}`: {e}", show()))?;
    let header: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&header).map_err(|e| format!("`{}`: {e}", show()))?;
    Ok(header
        .iter()
        .filter(|(name, _)| *name != "__metadata__")
        .map(|(_, tensor)| {
            tensor["shape"].as_array().map_or(0, |dims| {
                dims.iter().filter_map(serde_json::Value::as_u64).product()
            })
        })
        .sum())
}

/// The shape of the model in directory `dir`.
///
/// # Errors
/// Why it cannot be read: no `config.json`, a number missing, no `.safetensors` file, a
/// header that does not parse.
pub fn local(dir: &Path) -> Result<Shape, String> {
    let config = std::fs::read(dir.join("config.json"))
        .map_err(|e| format!("`{}`: {e}", dir.join("config.json").display()))?;
    let config: serde_json::Value =
        serde_json::from_slice(&config).map_err(|e| format!("`config.json`: {e}"))?;
    let (hidden, layers, vocab) = config_numbers(&config)?;
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("`{}`: {e}", dir.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "safetensors"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(format!("no `.safetensors` file in `{}`", dir.display()));
    }
    let parameters = files
        .iter()
        .map(|f| file_parameters(f))
        .sum::<Result<u64, String>>()?;
    Ok(Shape {
        parameters,
        hidden,
        layers,
        vocab,
    })
}

/// The shape of Hub model `repo` at `endpoint`, read with `token` when set.
///
/// # Errors
/// Why it cannot be read (the Hub's status, a gated model without a token, no
/// `safetensors` metadata, a number missing), never the token.
pub async fn hub(
    endpoint: &str,
    repo: &str,
    token: Option<&SecretString>,
    timeout: Duration,
) -> Result<Shape, String> {
    if !repo.split('/').all(|part| {
        !part.is_empty()
            && part != ".."
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    }) {
        return Err(format!("`{repo}` is not a Hub model ID"));
    }
    let http = reqwest::Client::builder()
        .timeout(timeout)
        .build()
        .map_err(|e| e.to_string())?;
    let get = |path: String| {
        let mut request = http.get(format!("{}{path}", endpoint.trim_end_matches('/')));
        if let Some(token) = token {
            let mut value = reqwest::header::HeaderValue::from_str(&format!(
                "Bearer {}",
                token.expose_secret()
            ))
            .unwrap_or_else(|_| reqwest::header::HeaderValue::from_static(""));
            value.set_sensitive(true);
            request = request.header(reqwest::header::AUTHORIZATION, value);
        }
        async move {
            let response = request
                .send()
                .await
                .map_err(|e| format!("the Hub could not be reached: {}", e.without_url()))?;
            let status = response.status();
            if status == 401 || status == 403 {
                return Err(format!(
                    "the Hub answered {status} for `{repo}`: a gated or private model needs `OVERBRAINER_HF_TOKEN`"
                ));
            }
            if !status.is_success() {
                return Err(format!("the Hub answered {status} for `{repo}`"));
            }
            response
                .json::<serde_json::Value>()
                .await
                .map_err(|e| format!("the Hub's answer for `{repo}`: {}", e.without_url()))
        }
    };
    let info = get(format!("/api/models/{repo}?expand[]=safetensors")).await?;
    let parameters = info["safetensors"]["total"]
        .as_u64()
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("the Hub has no `safetensors` metadata for `{repo}`"))?;
    let config = get(format!("/{repo}/resolve/main/config.json")).await?;
    let (hidden, layers, vocab) = config_numbers(&config)?;
    Ok(Shape {
        parameters,
        hidden,
        layers,
        vocab,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn safetensors(dir: &Path, name: &str, tensors: &[(&str, &[u64])]) {
        let mut header = serde_json::Map::new();
        header.insert("__metadata__".into(), serde_json::json!({"format": "pt"}));
        for (tensor, shape) in tensors {
            header.insert(
                (*tensor).into(),
                serde_json::json!({"dtype": "F32", "shape": shape, "data_offsets": [0, 0]}),
            );
        }
        let header = serde_json::to_vec(&header).unwrap();
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend_from_slice(&header);
        std::fs::write(dir.join(name), bytes).unwrap();
    }

    #[test]
    fn a_local_model_directory_gives_its_shape_from_config_and_every_header() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("config.json"),
            r#"{"hidden_size": 64, "num_hidden_layers": 2, "vocab_size": 1000}"#,
        )
        .unwrap();
        safetensors(
            dir.path(),
            "model-00001-of-00002.safetensors",
            &[("embed", &[1000, 64]), ("norm", &[64])],
        );
        safetensors(
            dir.path(),
            "model-00002-of-00002.safetensors",
            &[("lm_head", &[1000, 64])],
        );
        assert_eq!(
            local(dir.path()).unwrap(),
            Shape {
                parameters: 64_000 + 64 + 64_000,
                hidden: 64,
                layers: 2,
                vocab: 1000
            }
        );
        std::fs::write(dir.path().join("config.json"), r#"{"hidden_size": 64}"#).unwrap();
        assert_eq!(
            local(dir.path()).unwrap_err(),
            "`config.json` has no `num_hidden_layers`"
        );
    }

    #[tokio::test]
    async fn a_hub_model_gives_its_shape_and_a_gated_one_asks_for_the_token() {
        use wiremock::matchers::{method, path};
        use wiremock::{Mock, MockServer, ResponseTemplate};
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .and(path("/api/models/org/model"))
            .respond_with(ResponseTemplate::new(200).set_body_json(
                serde_json::json!({"id": "org/model", "safetensors": {"parameters": {"BF16": 8_030_261_248_u64}, "total": 8_030_261_248_u64}}),
            ))
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .and(path("/org/model/resolve/main/config.json"))
            .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({
                "text_config": {"hidden_size": 4096, "num_hidden_layers": 32, "vocab_size": 128_256}
            })))
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .and(path("/api/models/org/gated"))
            .respond_with(ResponseTemplate::new(401))
            .mount(&server)
            .await;
        let token = SecretString::from("hf_CANARYq2Wm8Xv4Kp7Tz1Rb5Nd");
        let shape = hub(
            &server.uri(),
            "org/model",
            Some(&token),
            Duration::from_secs(10),
        )
        .await
        .unwrap();
        assert_eq!(
            shape,
            Shape {
                parameters: 8_030_261_248,
                hidden: 4096,
                layers: 32,
                vocab: 128_256
            }
        );
        let error = hub(
            &server.uri(),
            "org/gated",
            Some(&token),
            Duration::from_secs(10),
        )
        .await
        .unwrap_err();
        assert!(error.contains("needs `OVERBRAINER_HF_TOKEN`"), "{error}");
        assert!(!error.contains("q2Wm8Xv4"), "{error}");
        assert!(
            hub(&server.uri(), "../etc", None, Duration::from_secs(1))
                .await
                .is_err()
        );
    }
}
