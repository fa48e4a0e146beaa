//! `hardware.json` (CMP-11), written by the compare client on the serving machine, and
//! the report's hardware text (CMP-22): the GPUs of the build that served the child, each
//! model with its count, joined by ` + `, then the build label; a CPU build shows the
//! CPU model, whatever GPU the machine has. The devices are the ones `llama-server
//! --list-devices` names, so the text says what the build used, not what the machine
//! holds. Pure.

use serde::{Deserialize, Serialize};

/// One device the build can use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Device {
    /// ggml's backend name (`CUDA`, `ROCm`, `Metal`/`MTL`, `Vulkan`).
    pub backend: String,
    /// The device's name.
    pub name: String,
}

/// `hardware.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hardware {
    /// The CPU model.
    #[serde(default)]
    pub cpu: String,
    /// `uname -m`.
    #[serde(default)]
    pub machine: String,
    /// `uname -s`.
    #[serde(default)]
    pub system: String,
    /// The devices of the build.
    #[serde(default)]
    pub devices: Vec<Device>,
    /// `llama-server --version`'s version line.
    #[serde(default)]
    pub version: String,
}

/// The kind of build that served the child.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Build {
    /// No GPU backend.
    Cpu,
    /// NVIDIA's.
    Cuda,
    /// AMD's.
    Rocm,
    /// Apple's.
    Metal,
    /// Vulkan.
    Vulkan,
}

impl Build {
    fn of(backend: &str) -> Option<Self> {
        match backend.to_ascii_lowercase().as_str() {
            "cuda" => Some(Self::Cuda),
            "rocm" | "hip" => Some(Self::Rocm),
            "metal" | "mtl" => Some(Self::Metal),
            "vulkan" => Some(Self::Vulkan),
            _ => None,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Self::Cpu => "CPU build",
            Self::Cuda => "CUDA build",
            Self::Rocm => "ROCm build",
            Self::Metal => "Metal",
            Self::Vulkan => "Vulkan build",
        }
    }
}

/// The build of `hardware`: the first GPU backend among its devices, else the CPU.
#[must_use]
pub fn build(hardware: &Hardware) -> Build {
    hardware
        .devices
        .iter()
        .find_map(|d| Build::of(&d.backend))
        .unwrap_or(Build::Cpu)
}

/// The hardware text of CMP-22.
#[must_use]
pub fn text(hardware: &Hardware) -> String {
    let kind = build(hardware);
    if kind == Build::Cpu {
        let cpu = if hardware.cpu.is_empty() {
            "unknown CPU"
        } else {
            &hardware.cpu
        };
        return format!("{cpu} ({})", kind.label());
    }
    let mut names: Vec<&str> = hardware
        .devices
        .iter()
        .filter(|d| Build::of(&d.backend) == Some(kind))
        .map(|d| d.name.as_str())
        .collect();
    if kind == Build::Rocm && names.iter().any(|n| *n != "AMD Radeon Graphics") {
        names.retain(|n| *n != "AMD Radeon Graphics");
    }
    let mut counted: Vec<(&str, usize)> = Vec::new();
    for name in names {
        match counted.iter_mut().find(|(n, _)| *n == name) {
            Some((_, count)) => *count += 1,
            None => counted.push((name, 1)),
        }
    }
    if kind == Build::Metal {
        let chip = counted.first().map_or("Apple silicon", |(n, _)| n);
        return format!("{chip} ({})", kind.label());
    }
    let gpus: Vec<String> = counted
        .iter()
        .map(|(name, count)| format!("{count} x {name}"))
        .collect();
    format!("{} ({})", gpus.join(" + "), kind.label())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hw(devices: &[(&str, &str)]) -> Hardware {
        Hardware {
            cpu: "AMD EPYC 7763 64-Core Processor".into(),
            devices: devices
                .iter()
                .map(|(b, n)| Device {
                    backend: (*b).into(),
                    name: (*n).into(),
                })
                .collect(),
            ..Hardware::default()
        }
    }

    #[test]
    fn the_hardware_text_names_the_gpus_of_the_build_or_the_cpu() {
        let table = [
            (hw(&[]), "AMD EPYC 7763 64-Core Processor (CPU build)"),
            (
                hw(&[("CUDA", "NVIDIA H200")]),
                "1 x NVIDIA H200 (CUDA build)",
            ),
            (
                hw(&[
                    ("CUDA", "NVIDIA H100"),
                    ("CUDA", "NVIDIA H100"),
                    ("CUDA", "NVIDIA A10"),
                ]),
                "2 x NVIDIA H100 + 1 x NVIDIA A10 (CUDA build)",
            ),
            (
                hw(&[
                    ("ROCm", "AMD Radeon Graphics"),
                    ("ROCm", "AMD Instinct MI300X"),
                ]),
                "1 x AMD Instinct MI300X (ROCm build)",
            ),
            (
                hw(&[("ROCm", "AMD Radeon Graphics")]),
                "1 x AMD Radeon Graphics (ROCm build)",
            ),
            (hw(&[("MTL", "Apple M2 Pro")]), "Apple M2 Pro (Metal)"),
        ];
        for (hardware, expected) in table {
            assert_eq!(text(&hardware), expected);
        }
        assert_eq!(build(&hw(&[("CUDA", "x")])), Build::Cuda);
    }
}
