//! The init wizard's fields: which a screen shows given the answers so far, how each is
//! typed, and why a value is refused (TUI-74, TUI-75).

use crate::project::wizard::{PRESETS, valid_name};

/// A field of the wizard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Id {
    /// `project.name`.
    Name,
    /// A preset provider or `custom`.
    Preset,
    /// A custom provider's name.
    CustomName,
    /// A custom provider's protocol.
    Protocol,
    /// A custom provider's base URL.
    BaseUrl,
    /// Where the provider's key comes from.
    KeySource,
    /// The provider's key, typed.
    Key,
    /// The provider's key as a Vault reference.
    KeyVault,
    /// The generator's model.
    Generator,
    /// The parent's model.
    Parent,
    /// The parent's reasoning.
    Reasoning,
    /// The embedder's model (optional).
    Embedder,
    /// Where training runs.
    Training,
    /// Native or Docker.
    Runtime,
    /// The SSH host.
    Host,
    /// Where the Runpod key comes from.
    RunpodKeySource,
    /// The Runpod key, typed.
    RunpodKey,
    /// The Runpod key as a Vault reference.
    RunpodVault,
    /// `auto` or a list of GPU types.
    GpuTypes,
    /// `training.base_model`.
    BaseModel,
    /// `training.adapter`.
    Adapter,
    /// A topic's name.
    TopicName,
    /// A topic's description.
    TopicDescription,
    /// A topic's subtopic count.
    TopicSubtopics,
    /// A topic's questions per subtopic.
    TopicQuestions,
}

/// How a field is typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Free text.
    Text,
    /// Text drawn as `•`.
    Secret,
    /// A whole number of at least 1.
    Number,
    /// One of these, changed with ←/→.
    Choice(&'static [&'static str]),
}

/// One field as a screen shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// Which.
    pub id: Id,
    /// Its label.
    pub label: &'static str,
    /// How it is typed.
    pub kind: Kind,
    /// What it takes, drawn under it.
    pub hint: &'static str,
}

/// The choices of the provider field: the presets, then `custom`.
pub const PROVIDERS: [&str; 5] = [
    PRESETS[0].name,
    PRESETS[1].name,
    PRESETS[2].name,
    PRESETS[3].name,
    "custom",
];
/// Where a key comes from.
pub const KEY_SOURCES: [&str; 3] = ["type it", "vault reference", "fill in .env later"];
/// Where training runs.
pub const TRAININGS: [&str; 4] = ["skip", "local", "ssh", "runpod"];

const fn field(id: Id, label: &'static str, kind: Kind, hint: &'static str) -> Field {
    Field {
        id,
        label,
        kind,
        hint,
    }
}

/// The topic form's fields.
pub const TOPIC_FIELDS: [Field; 4] = [
    field(
        Id::TopicName,
        "name",
        Kind::Text,
        "letters a-z, digits and _",
    ),
    field(
        Id::TopicDescription,
        "description",
        Kind::Text,
        "what the questions are about, in a sentence",
    ),
    field(
        Id::TopicSubtopics,
        "subtopics",
        Kind::Number,
        "subtopics to generate (at least 1)",
    ),
    field(
        Id::TopicQuestions,
        "questions per subtopic",
        Kind::Number,
        "questions to keep per subtopic (at least 1)",
    ),
];

/// The value of a field, through `get`.
pub type Get<'a> = &'a dyn Fn(Id) -> &'a str;

/// The fields of screen `screen` (0-based; the topics, summary and last screens have
/// none) given the answers so far.
#[must_use]
pub fn of_screen(screen: usize, get: Get<'_>) -> Vec<Field> {
    match screen {
        0 => vec![field(
            Id::Name,
            "project name",
            Kind::Text,
            "`project.name` in overbrainer.toml",
        )],
        1 => provider_fields(get),
        2 => key_fields((Id::KeySource, Id::Key, Id::KeyVault), "key source", get),
        3 => model_fields(get),
        5 => training_fields(get),
        _ => Vec::new(),
    }
}

fn provider_fields(get: Get<'_>) -> Vec<Field> {
    let mut fields = vec![field(
        Id::Preset,
        "provider",
        Kind::Choice(&PROVIDERS),
        "←/→: a preset fills in the protocol and base URL",
    )];
    if get(Id::Preset) == "custom" {
        fields.extend([
            field(
                Id::CustomName,
                "name",
                Kind::Text,
                "letters a-z, digits and _",
            ),
            field(
                Id::Protocol,
                "protocol",
                Kind::Choice(&["openai", "anthropic"]),
                "openai: chat completions; anthropic: the Messages API",
            ),
            field(
                Id::BaseUrl,
                "base URL",
                Kind::Text,
                "http:// or https://, e.g. http://127.0.0.1:11434/v1",
            ),
        ]);
    }
    fields
}

fn model_fields(get: Get<'_>) -> Vec<Field> {
    let mut fields = vec![
        field(
            Id::Generator,
            "generator model",
            Kind::Text,
            "writes the subtopics and questions",
        ),
        field(
            Id::Parent,
            "parent model",
            Kind::Text,
            "answers the questions: the model the child learns from",
        ),
        field(
            Id::Reasoning,
            "parent reasoning",
            Kind::Choice(&["on", "off"]),
            "on: keep the parent's reasoning in the answers",
        ),
    ];
    if protocol(get) == "openai" {
        fields.push(field(
            Id::Embedder,
            "embedder model",
            Kind::Text,
            "optional, for dedup by embeddings; empty for none",
        ));
    }
    fields
}

fn training_fields(get: Get<'_>) -> Vec<Field> {
    let mut fields = vec![field(
        Id::Training,
        "training",
        Kind::Choice(&TRAININGS),
        "where Axolotl runs; skip: auto mode stops after split",
    )];
    let runtime = field(
        Id::Runtime,
        "runtime",
        Kind::Choice(&["native", "docker"]),
        "native: axolotl on PATH; docker: the pinned image",
    );
    match get(Id::Training) {
        "local" => fields.push(runtime),
        "ssh" => fields.extend([
            field(
                Id::Host,
                "SSH host",
                Kind::Text,
                "user@host or a ~/.ssh/config alias (written to .env)",
            ),
            runtime,
        ]),
        "runpod" => {
            fields.extend(key_fields(
                (Id::RunpodKeySource, Id::RunpodKey, Id::RunpodVault),
                "Runpod key",
                get,
            ));
            fields.push(field(
                Id::GpuTypes,
                "GPU types",
                Kind::Text,
                "auto, or GPU type IDs in order, separated by commas",
            ));
        }
        _ => return fields,
    }
    fields.extend([
        field(
            Id::BaseModel,
            "base model",
            Kind::Text,
            "a Hugging Face repo ID or a path on the target",
        ),
        field(
            Id::Adapter,
            "adapter",
            Kind::Choice(&["lora", "qlora", "full"]),
            "lora, qlora (4-bit base) or full fine-tuning",
        ),
    ]);
    fields
}

/// The key source and, by its value, the typed key or the Vault reference.
fn key_fields(ids: (Id, Id, Id), label: &'static str, get: Get<'_>) -> Vec<Field> {
    let (source, key, vault) = ids;
    let mut fields = vec![field(
        source,
        label,
        Kind::Choice(&KEY_SOURCES),
        "←/→: typed here, a Vault reference, or .env later",
    )];
    match get(source) {
        "type it" => fields.push(field(
            key,
            "key",
            Kind::Secret,
            "written to .env only (mode 600), never shown again",
        )),
        "vault reference" => fields.push(field(
            vault,
            "reference",
            Kind::Text,
            "vault:<mount>/<path>#<field>",
        )),
        _ => {}
    }
    fields
}

/// The chosen provider's protocol.
#[must_use]
pub fn protocol(get: Get<'_>) -> &str {
    let preset = get(Id::Preset);
    PRESETS
        .iter()
        .find(|p| p.name == preset)
        .map_or_else(|| get(Id::Protocol), |p| p.protocol)
}

/// Why `value` is refused for `field`, or `None`.
#[must_use]
pub fn problem(field: &Field, value: &str) -> Option<String> {
    let value_trimmed = value.trim();
    let required = !matches!(field.id, Id::Embedder);
    if let Kind::Choice(_) = field.kind {
        return None;
    }
    if value_trimmed.is_empty() {
        return required.then(|| match field.id {
            Id::Key | Id::RunpodKey => {
                "type the key, or choose `fill in .env later` above".to_owned()
            }
            _ => format!("the {} is required", field.label),
        });
    }
    if value.chars().any(char::is_control) {
        return Some(format!(
            "the {} cannot hold control characters",
            field.label
        ));
    }
    match field.id {
        Id::CustomName | Id::TopicName if !valid_name(value) => {
            Some("use only letters a-z, digits and _".to_owned())
        }
        Id::BaseUrl if !base_url(value_trimmed) => {
            Some("an http:// or https:// URL with a host".to_owned())
        }
        Id::KeyVault | Id::RunpodVault
            if !matches!(
                crate::secrets::SecretRef::parse(value_trimmed),
                Ok(crate::secrets::SecretRef::Vault(_))
            ) =>
        {
            Some("expected vault:<mount>/<path>#<field>".to_owned())
        }
        Id::Host
            if value_trimmed.contains(char::is_whitespace) || value_trimmed.starts_with('-') =>
        {
            Some("user@host or an alias: no spaces, no leading `-`".to_owned())
        }
        Id::GpuTypes => gpu_types(value).err(),
        Id::TopicSubtopics | Id::TopicQuestions
            if !value_trimmed.parse::<u32>().is_ok_and(|n| n >= 1) =>
        {
            Some("a whole number of at least 1".to_owned())
        }
        _ => None,
    }
}

/// Whether `value` is an `http://` or `https://` URL with a host.
fn base_url(value: &str) -> bool {
    reqwest::Url::parse(value).is_ok_and(|url| {
        matches!(url.scheme(), "http" | "https")
            && url
                .host_str()
                .is_some_and(|h| !h.is_empty() && h != "https" && h != "http")
    })
}

/// `auto` (`None`) or the list of GPU types typed.
///
/// # Errors
///
/// Why the list is refused: an empty item in it.
pub fn gpu_types(value: &str) -> Result<Option<Vec<String>>, String> {
    let value = value.trim();
    if value == "auto" {
        return Ok(None);
    }
    let types: Vec<String> = value.split(',').map(|t| t.trim().to_owned()).collect();
    if types.iter().any(String::is_empty) {
        return Err("`auto`, or GPU type IDs separated by commas".to_owned());
    }
    Ok(Some(types))
}
