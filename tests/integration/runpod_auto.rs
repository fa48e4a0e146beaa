//! `gpu_types = "auto"` and `data_center_ids = "auto"` through `train` on the Runpod v2
//! stand-in (spec/runpod.md section 3, issue 13): the cheapest Secure Cloud type in stock
//! that meets `min_vram_gb` and `max_price_per_hour` is created first, the choice is
//! shown before any pod; a capacity answer makes the run read the catalog again, and the
//! untried types are ordered afresh (a type back in stock and cheaper comes next); when
//! every type is refused the run fails naming each; when nothing fits, or no data center
//! has a listed type in stock, the run is refused before any pod, secret or run
//! directory, naming the request. The one pod made is a real container of the stand-in.

use serde_json::{Value, json};

use crate::runpod_train::{PodProject, assert_clean, overbrainer, pod_project, pod_state, text};

fn gpu(id: &str, memory: u32, price: Option<f64>, stock: &str) -> Value {
    json!({
        "id": id, "name": id, "memory": memory, "secure": true, "community": true,
        "price": {"secure": price, "community": null},
        "maxCount": {"secure": 8, "community": 8},
        "availability": stock,
        "dataCenters": [{"id": "EU-RO-1", "name": "Romania", "availability": stock}],
    })
}

/// Types around the target's floor (40 GB) and cap (USD 2/h): too small, too dear,
/// unpriced, Community only, and three that fit.
fn catalog() -> Vec<Value> {
    let mut community = gpu("NVIDIA GeForce RTX 3090", 24, Some(0.22), "HIGH");
    community["secure"] = json!(false);
    vec![
        gpu("NVIDIA GeForce RTX 4090", 24, Some(0.34), "HIGH"),
        gpu("NVIDIA A40", 48, Some(0.4), "HIGH"),
        gpu("NVIDIA L40S", 48, Some(0.79), "HIGH"),
        gpu("NVIDIA A100 80GB PCIe", 80, Some(1.19), "HIGH"),
        gpu("NVIDIA H100 80GB HBM3", 80, Some(2.69), "HIGH"),
        gpu("NVIDIA B200", 180, None, "HIGH"),
        community,
    ]
}

/// `train`'s project on the stand-in with `gpu_types = "auto"` and `extra` keys.
async fn auto_project(extra: &str) -> PodProject {
    let project = pod_project(&format!("\"auto\"\n{extra}")).await;
    project.standin.state().catalog.gpus = catalog();
    project
}

/// The GPU type of each create call, in order.
fn creates(project: &PodProject) -> Vec<String> {
    project
        .standin
        .state()
        .requests
        .iter()
        .filter(|(m, p, _)| m == "POST" && p == "/v2/pods")
        .map(|(_, _, body)| {
            let body: Value = serde_json::from_str(body).unwrap();
            body["gpu"]["id"].as_str().unwrap().to_owned()
        })
        .collect()
}

fn catalog_reads(project: &PodProject) -> usize {
    project
        .standin
        .state()
        .requests
        .iter()
        .filter(|(m, p, _)| m == "GET" && p == "/v2/catalog/gpus")
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_auto_picks_the_cheapest_fitting_type_and_reorders_from_a_fresh_read_after_capacity()
{
    let project = auto_project("min_vram_gb = 40\nmax_price_per_hour = 2.0").await;
    {
        let mut state = project.standin.state();
        state.faults.capacity.insert("NVIDIA A40".into());
        // While A40 is refused, L40S sells out and RTX A6000 comes back, cheaper.
        let mut after = catalog();
        after[2]["availability"] = json!("NONE");
        after.push(gpu("NVIDIA RTX A6000", 48, Some(0.49), "MEDIUM"));
        state.catalog.after_capacity = Some(after);
    }
    let output = crate::runpod_faults::interrupted_once_the_pod_exists(&project);
    let all = text(&output);
    // The first order, shown before any pod: the fitting types, cheapest first.
    assert!(
        all.contains(
            "`gpu_types = \"auto\"`, gpu_count = 1, min_vram_gb = 40, max_price_per_hour = 2 picks, in order: \
NVIDIA A40 (48 GB, USD 0.40/h); NVIDIA L40S (48 GB, USD 0.79/h); NVIDIA A100 80GB PCIe (80 GB, USD 1.19/h)"
        ),
        "{all}"
    );
    assert!(
        all.contains(
            "the catalog read again orders the GPU types left: NVIDIA RTX A6000, NVIDIA A100 80GB PCIe"
        ),
        "{all}"
    );
    assert_eq!(
        creates(&project),
        ["NVIDIA A40", "NVIDIA RTX A6000"],
        "{all}"
    );
    assert_eq!(catalog_reads(&project), 2, "{all}");
    let pod = pod_state(&project).unwrap();
    assert_eq!(pod["gpu_type"], "NVIDIA RTX A6000", "{pod}");
    // Ctrl-C before the job: the pod is deleted, nothing is left.
    assert!(!output.status.success(), "{all}");
    assert_clean(&project);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_auto_refuses_before_any_pod_when_nothing_fits_and_fails_naming_every_refused_type()
{
    // Nothing at 100 GB under USD 2/h: refused naming the request, nothing made.
    let project = auto_project("min_vram_gb = 100\nmax_price_per_hour = 2.0").await;
    let output = overbrainer(&project.training, &["train", "--target", "pod"]).await;
    let all = text(&output);
    assert!(!output.status.success(), "{all}");
    assert!(
        all.contains(
            "target `pod`: no Secure Cloud GPU type in stock matches `gpu_types = \"auto\"`, gpu_count = 1, min_vram_gb = 100, max_price_per_hour = 2; no pod was created"
        ),
        "{all}"
    );
    assert!(project.training.run_ids().is_empty());
    assert!(creates(&project).is_empty());
    assert!(project.standin.state().secrets.is_empty(), "{all}");

    // No `min_vram_gb`: the floor is the VRAM estimate from the base model's shape (the
    // tiny model's directory here), named in the refusal.
    let config = project.training.project.read("overbrainer.toml");
    project.training.project.write(
        "overbrainer.toml",
        &config.replace(
            "min_vram_gb = 100\nmax_price_per_hour = 2.0",
            "max_price_per_hour = 0.3",
        ),
    );
    let output = overbrainer(&project.training, &["train", "--target", "pod"]).await;
    let all = text(&output);
    assert!(!output.status.success(), "{all}");
    assert!(
        all.contains("no Secure Cloud GPU type in stock matches `gpu_types = \"auto\"`, gpu_count = 1, the VRAM estimate of ")
            && all.contains(" GB), max_price_per_hour = 0.3; no pod was created"),
        "{all}"
    );
    assert!(!all.contains("no VRAM estimate could be made"), "{all}");
    project.training.project.write("overbrainer.toml", &config);

    // Listed types with automatic data centers: none has one in stock.
    let config = project.training.project.read("overbrainer.toml");
    let listed = config.replace(
        "gpu_types = \"auto\"\nmin_vram_gb = 100\nmax_price_per_hour = 2.0",
        "gpu_types = [\"NVIDIA A40\"]\ndata_center_ids = \"auto\"",
    );
    assert_ne!(listed, config);
    project.training.project.write("overbrainer.toml", &listed);
    project.standin.state().catalog.gpus[1]["dataCenters"][0]["availability"] = json!("NONE");
    let output = overbrainer(&project.training, &["train", "--target", "pod"]).await;
    let all = text(&output);
    assert!(!output.status.success(), "{all}");
    assert!(
        all.contains(
            "GPU types NVIDIA A40 meet the request, but no data center has one in stock for gpu_count = 1 (`data_center_ids = \"auto\"`)"
        ),
        "{all}"
    );
    assert!(project.training.run_ids().is_empty());

    // Every fitting type refused for capacity: a fresh read after each but the last,
    // and the run fails naming each type, with no pod.
    project.training.project.write(
        "overbrainer.toml",
        &config.replace("min_vram_gb = 100", "min_vram_gb = 40"),
    );
    project.standin.state().catalog.gpus = catalog();
    {
        let mut state = project.standin.state();
        for id in ["NVIDIA A40", "NVIDIA L40S", "NVIDIA A100 80GB PCIe"] {
            state.faults.capacity.insert(id.into());
        }
    }
    let output = overbrainer(&project.training, &["train", "--target", "pod"]).await;
    let all = text(&output);
    assert!(!output.status.success(), "{all}");
    assert_eq!(
        creates(&project),
        ["NVIDIA A40", "NVIDIA L40S", "NVIDIA A100 80GB PCIe"],
        "{all}"
    );
    // One read for each earlier refusal (3), then the first read and two re-reads.
    assert_eq!(catalog_reads(&project), 3 + 1 + 2, "{all}");
    assert!(all.contains("no pod could be created for any of"), "{all}");
    for id in ["NVIDIA A40", "NVIDIA L40S", "NVIDIA A100 80GB PCIe"] {
        assert!(all.contains(id), "{id}: {all}");
    }
    assert!(project.standin.state().pods.is_empty());
    assert_clean(&project);
}
