//! `pod gpus`, `pod datacenters`, `pod volumes` and `pod templates` through the real
//! binary against the Runpod v2 stand-in's canned catalog (spec/runpod.md section 2,
//! issue 13): Secure Cloud types only, cheapest first with unpriced ones last, each
//! filter, the stock of one data center, the empty-result lines, escape sequences and
//! control characters in catalog text removed (POD-11), no project needed and no lock
//! taken, a missing key refused, and the key in no output.

use serde_json::{Value, json};

use crate::runpod_standin::Standin;
use crate::runpod_train::text;
use crate::util::TestProject;

pub(crate) const KEY: &str = "rpa_CANARY6Hq2Lw9Xt4Rz7Bm1Kc5Nv8Pd3Js0Fg";

fn gpu(id: &str, memory: u32, price: Option<f64>, stock: &str, dcs: &[(&str, &str)]) -> Value {
    json!({
        "id": id, "name": id, "manufacturer": "Nvidia", "pool": "pool", "memory": memory,
        "secure": true, "community": true,
        "price": {"secure": price, "community": 0.1, "serverless": null},
        "maxCount": {"secure": 8, "community": 8},
        "availability": stock,
        "dataCenters": dcs.iter().map(|(id, s)| json!({"id": id, "name": id, "availability": s}))
            .collect::<Vec<_>>(),
    })
}

/// A catalog with priced, unpriced, out-of-stock and Community-only types, one ID
/// carrying an escape sequence, data centers, volumes and templates.
pub(crate) fn catalog() -> crate::runpod_standin::Catalog {
    let mut community = gpu("NVIDIA GeForce RTX 3090", 24, Some(0.22), "HIGH", &[]);
    community["secure"] = json!(false);
    crate::runpod_standin::Catalog {
        gpus: vec![
            gpu(
                "NVIDIA H100 80GB HBM3",
                80,
                Some(2.69),
                "LOW",
                &[("EU-RO-1", "LOW")],
            ),
            gpu(
                "NVIDIA A100 80GB PCIe",
                80,
                Some(1.19),
                "NONE",
                &[("EU-RO-1", "NONE")],
            ),
            gpu("NVIDIA A40", 48, Some(0.4), "HIGH", &[("US-TX-3", "HIGH")]),
            gpu(
                "NVIDIA L40S",
                48,
                Some(0.79),
                "MEDIUM",
                &[("EU-RO-1", "HIGH"), ("US-TX-3", "LOW")],
            ),
            gpu("NVIDIA B200", 180, None, "HIGH", &[("US-KS-2", "HIGH")]),
            gpu(
                "NVIDIA \u{1b}[31mRTX\u{1b}[0m A6000\n",
                48,
                Some(0.49),
                "LOW",
                &[],
            ),
            community,
        ],
        data_centers: vec![
            json!({"id": "US-TX-3", "name": "Texas\t3", "region": "NORTH_AMERICA",
                "gpuAvailability": [{"id": "NVIDIA A40", "availability": "HIGH"},
                                    {"id": "NVIDIA L40S", "availability": "LOW"}]}),
            json!({"id": "EU-RO-1", "name": "Romania \u{1b}]0;pwned\u{7}1", "region": "EUROPE",
                "gpuAvailability": [{"id": "NVIDIA H100 80GB HBM3", "availability": "LOW"},
                                    {"id": "NVIDIA A100 80GB PCIe", "availability": "NONE"}]}),
        ],
        volumes: vec![
            json!({"id": "vol2", "name": "weights", "size": 200, "dataCenter": "EU-RO-1", "type": "STANDARD"}),
            json!({"id": "vol1", "name": "datasets", "size": 50, "dataCenter": "US-TX-3", "type": "STANDARD"}),
        ],
        templates: vec![
            json!({"id": "tpl2", "name": "zeta", "image": "zeta:2", "serverless": false}),
            json!({"id": "tpl1", "name": "axolotl", "image": "axolotlai/axolotl:0.19", "serverless": false}),
            json!({"id": "tpl2", "name": "zeta twice", "image": "zeta:2", "serverless": false}),
            json!({"id": "srv1", "name": "worker", "image": "worker:1", "serverless": true}),
        ],
        ..Default::default()
    }
}

/// `pod ARGS` in `dir` with the stand-in's key and base (and `extra`); the output.
async fn pod(
    standin: &Standin,
    dir: &TestProject,
    args: &[&str],
    extra: &[(&str, &str)],
) -> std::process::Output {
    let mut cmd = dir.cmd();
    cmd.arg("pod").args(args);
    cmd.env("OVERBRAINER_RUNPOD__API_KEY", KEY)
        .env("OVERBRAINER_RUNPOD__BASE_URL", standin.base());
    for (name, value) in extra {
        cmd.env(name, value);
    }
    let output = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    let all = text(&output);
    assert!(!all.contains(&KEY[4..24]), "the key in the output: {all}");
    output
}

/// `pod ARGS`, which must succeed: its stdout.
async fn table(standin: &Standin, dir: &TestProject, args: &[&str]) -> String {
    let output = pod(standin, dir, args, &[]).await;
    assert!(output.status.success(), "pod {args:?}: {}", text(&output));
    String::from_utf8(output.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_catalog_commands_print_sorted_sanitized_tables_with_each_filter_and_no_project() {
    let standin = Standin::start(KEY).await;
    standin.state().catalog = catalog();
    // No `overbrainer.toml` here: the catalog needs only the key.
    let dir = TestProject::empty();
    let gpus = table(&standin, &dir, &["gpus"]).await;
    assert_eq!(
        gpus,
        "\
ID                     VRAM GB   $/H  MAX COUNT  STOCK
NVIDIA A40                  48  0.40          8  HIGH
NVIDIA RTX A6000            48  0.49          8  LOW
NVIDIA L40S                 48  0.79          8  MEDIUM
NVIDIA A100 80GB PCIe       80  1.19          8  NONE
NVIDIA H100 80GB HBM3       80  2.69          8  LOW
NVIDIA B200                180     -          8  HIGH
"
    );
    // The stock was asked for, for one GPU per pod, on Secure Cloud.
    let asked: Vec<String> = standin
        .state()
        .requests
        .iter()
        .filter(|(m, p, _)| m == "GET" && p == "/v2/catalog/gpus")
        .map(|(_, p, _)| p.clone())
        .collect();
    assert_eq!(asked.len(), 1);
    let rows = |text: &str| -> Vec<String> {
        text.lines()
            .skip(1)
            .map(|l| l.split("  ").next().unwrap().trim().to_owned())
            .collect()
    };
    let filtered = table(&standin, &dir, &["gpus", "--min-vram", "80", "--in-stock"]).await;
    assert_eq!(rows(&filtered), ["NVIDIA H100 80GB HBM3", "NVIDIA B200"]);
    let filtered = table(&standin, &dir, &["gpus", "--max-price", "0.79"]).await;
    assert_eq!(
        rows(&filtered),
        ["NVIDIA A40", "NVIDIA RTX A6000", "NVIDIA L40S"]
    );
    let eu = table(&standin, &dir, &["gpus", "--data-center", "EU-RO-1"]).await;
    assert_eq!(
        eu,
        "\
ID                     VRAM GB   $/H  MAX COUNT  STOCK
NVIDIA L40S                 48  0.79          8  HIGH
NVIDIA A100 80GB PCIe       80  1.19          8  NONE
NVIDIA H100 80GB HBM3       80  2.69          8  LOW
"
    );
    let none = table(&standin, &dir, &["gpus", "--min-vram", "200"]).await;
    assert_eq!(
        none,
        "No Secure Cloud GPU type matches with --min-vram 200.\n"
    );

    let centers = table(&standin, &dir, &["datacenters"]).await;
    assert_eq!(
        centers,
        "\
ID       NAME       REGION         GPU TYPES IN STOCK
EU-RO-1  Romania 1  EUROPE                          1
US-TX-3  Texas 3    NORTH_AMERICA                   2
"
    );
    let volumes = table(&standin, &dir, &["volumes"]).await;
    assert_eq!(
        volumes,
        "\
ID    NAME      SIZE GB  DATA CENTER
vol1  datasets       50  US-TX-3
vol2  weights       200  EU-RO-1
"
    );
    let templates = table(&standin, &dir, &["templates"]).await;
    assert_eq!(
        templates,
        "\
ID    NAME     IMAGE
tpl1  axolotl  axolotlai/axolotl:0.19
tpl2  zeta     zeta:2
"
    );
    // No escape byte and no control character reached the terminal.
    for out in [&gpus, &centers] {
        assert!(!out.chars().any(|c| c.is_control() && c != '\n'), "{out:?}");
    }
    // Reads only: nothing was created, and nothing was written in the directory.
    assert!(standin.state().pods.is_empty());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_catalog_commands_say_so_when_empty_and_refuse_without_a_key_or_with_a_bad_one() {
    let standin = Standin::start(KEY).await;
    let dir = TestProject::empty();
    for (args, line) in [
        (&["gpus"][..], "No Secure Cloud GPU type matches.\n"),
        (&["datacenters"][..], "No data center was found.\n"),
        (&["volumes"][..], "The account has no network volume.\n"),
        (&["templates"][..], "The account has no pod template.\n"),
    ] {
        assert_eq!(table(&standin, &dir, args).await, line, "{args:?}");
    }
    // No key: refused naming the variable, nothing asked.
    let before = standin.state().requests.len();
    let output = pod(
        &standin,
        &dir,
        &["gpus"],
        &[("OVERBRAINER_RUNPOD__API_KEY", "")],
    )
    .await;
    let all = text(&output);
    assert!(!output.status.success(), "{all}");
    assert!(
        all.contains("`OVERBRAINER_RUNPOD__API_KEY` is not set"),
        "{all}"
    );
    assert_eq!(standin.state().requests.len(), before);
    // A key Runpod refuses: the 401 is named, the key is not.
    let output = pod(
        &standin,
        &dir,
        &["volumes"],
        &[(
            "OVERBRAINER_RUNPOD__API_KEY",
            "rpa_CANARYwrongQ4Zt8Xm2Lk6Vb9Hn3",
        )],
    )
    .await;
    let all = text(&output);
    assert!(!output.status.success(), "{all}");
    assert!(all.contains("401"), "{all}");
    assert!(!all.contains("wrongQ4Zt8Xm2"), "{all}");
    // A price that is not one, and a base URL that is not allowed.
    for (args, extra, says) in [
        (
            &["gpus", "--max-price", "NaN"][..],
            &[][..],
            "is not a price",
        ),
        (
            &["gpus", "--max-price", "-1"][..],
            &[][..],
            "is not a price",
        ),
        (
            &["gpus"][..],
            &[("OVERBRAINER_RUNPOD__BASE_URL", "http://runpod.example/v2")][..],
            "OVERBRAINER_RUNPOD__BASE_URL",
        ),
    ] {
        let output = pod(&standin, &dir, args, extra).await;
        let all = text(&output);
        assert!(!output.status.success(), "{args:?}: {all}");
        assert!(all.contains(says), "{args:?}: {all}");
    }
}

/// The TUI's start confirmation and pickers read through
/// `overbrainer::runs::pod::preview::read` (TUI-21..TUI-23, TUI-43): the GPU catalog for
/// the target's `gpu_count` with the VRAM estimate of the local base model, and what the
/// confirmation shows from it; the data centers, volumes and templates; a target other
/// than `training.target` gets no estimate; a missing key is named and nothing leaks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(
    clippy::too_many_lines,
    reason = "one scenario: each listing and each refusal"
)]
async fn the_tui_reads_the_catalog_with_the_estimate_and_previews_the_start() {
    use overbrainer::env::EnvSnapshot;
    use overbrainer::runs::pod::preview::{Listing, Read, read};

    let standin = Standin::start(KEY).await;
    standin.state().catalog = catalog();
    let training = crate::training::Training::new(&crate::training::Setup::default());
    let config = training.project.read("overbrainer.toml").replacen(
        "target = \"local\"",
        "target = \"gpu\"",
        1,
    );
    training.project.write(
        "overbrainer.toml",
        &format!(
            "{config}\n[targets.gpu]\nkind = \"runpod\"\ngpu_types = \"auto\"\ngpu_count = 2\nmax_hours = 4\nmax_cost_usd = 1\n\n[targets.other]\nkind = \"runpod\"\ngpu_types = [\"NVIDIA A40\"]\nmax_hours = 1\n"
        ),
    );
    let env = EnvSnapshot::from_pairs([
        ("OVERBRAINER_RUNPOD__API_KEY", KEY.to_owned()),
        ("OVERBRAINER_RUNPOD__BASE_URL", standin.base()),
    ]);
    let root = training.project.path();
    let settings = overbrainer::check::load(root, &env).unwrap().settings;

    let Read::Gpus(gpus) = read(&settings, &env, Listing::Gpus("gpu".into()))
        .await
        .unwrap()
    else {
        panic!("a GPU read")
    };
    let estimate = *gpus.estimate.as_ref().expect("the tiny model's estimate");
    assert!(estimate > 0.0 && estimate < 16.0, "{estimate}");
    let asked: Vec<String> = standin
        .state()
        .requests
        .iter()
        .map(|(_, path, _)| path.clone())
        .filter(|p| p.contains("gpuCount"))
        .collect();
    assert!(asked.iter().all(|p| p.contains("gpuCount=2")), "{asked:?}");
    let text = gpus.preview(None).lines().join("\n");
    // The cheapest in stock is the A40; the dearest candidate the run may reach is the
    // H100 at 2 × 2.69; USD 1 buys under 30 minutes of it.
    assert!(
        text.contains(&format!("VRAM    {estimate:.1} GB per GPU (estimate)")),
        "{text}"
    );
    assert!(
        text.contains(
            "auto    would pick NVIDIA A40 (48 GB, USD 0.80/h) now; in order, 2 per pod:"
        ),
        "{text}"
    );
    assert!(
        text.contains("NVIDIA A40  USD 0.80/h  48 GB  stock HIGH  fit ok"),
        "{text}"
    );
    assert!(
        text.contains("some types have no listed price"),
        "the B200: {text}"
    );
    assert!(
        text.contains("max_cost_usd = 1: snapshot at USD 0.00 (95%, or 15 min before the cap), pod deleted at USD 1.00"),
        "{text}"
    );
    assert!(
        text.contains("the smallest cap that does is USD 2.69"),
        "{text}"
    );
    assert!(
        !text.contains("RTX\u{1b}"),
        "catalog text is sanitized: {text}"
    );

    let Read::Gpus(other) = read(&settings, &env, Listing::Gpus("other".into()))
        .await
        .unwrap()
    else {
        panic!("a GPU read")
    };
    assert_eq!(
        other.estimate,
        Err("`other` is not `training.target`".to_owned())
    );
    let Read::DataCenters(centers) = read(&settings, &env, Listing::DataCenters).await.unwrap()
    else {
        panic!("data centers")
    };
    assert_eq!(centers.len(), 2);
    let Read::Volumes(volumes) = read(&settings, &env, Listing::Volumes).await.unwrap() else {
        panic!("volumes")
    };
    assert_eq!(
        volumes
            .iter()
            .map(|v| v.data_center.as_str())
            .collect::<Vec<_>>(),
        ["EU-RO-1", "US-TX-3"]
    );
    let Read::Templates(templates) = read(&settings, &env, Listing::Templates).await.unwrap()
    else {
        panic!("templates")
    };
    assert_eq!(templates.len(), 4);

    let refused = read(&settings, &env, Listing::Gpus("local".into()))
        .await
        .unwrap_err();
    assert_eq!(refused, "target `local` is not a Runpod target");
    let no_key = EnvSnapshot::from_pairs([("OVERBRAINER_RUNPOD__BASE_URL", standin.base())]);
    let bare = overbrainer::check::load(root, &no_key).unwrap().settings;
    let no_key = read(&bare, &no_key, Listing::Volumes).await.unwrap_err();
    assert!(no_key.contains("OVERBRAINER_RUNPOD__API_KEY"), "{no_key}");
    let wrong = EnvSnapshot::from_pairs([
        (
            "OVERBRAINER_RUNPOD__API_KEY",
            "rpa_WRONGKEY7Hq2Lw9Xt4Rz7Bm1Kc5Nv8Pd3Js0Fg".to_owned(),
        ),
        ("OVERBRAINER_RUNPOD__BASE_URL", standin.base()),
    ]);
    let settings = overbrainer::check::load(root, &wrong).unwrap().settings;
    let wrong = read(&settings, &wrong, Listing::Templates)
        .await
        .unwrap_err();
    assert!(
        wrong.starts_with("the Runpod pod templates could not be read"),
        "{wrong}"
    );
    assert!(!wrong.contains("WRONGKEY7Hq2"), "{wrong}");
}

/// POD-47: a network volume grows through `PATCH /v2/network-volumes/{id}` and the list
/// reports its new size; a size not above its own, a refusal and an unknown volume are
/// errors; the key is in no error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_network_volume_grows_through_the_api_and_a_refusal_is_an_error() {
    let standin = Standin::start(KEY).await;
    standin.state().catalog = catalog();
    let client = standin.client(std::time::Duration::from_secs(30));
    assert_eq!(client.network_volume_gb("vol1").await.unwrap(), Some(50));
    assert_eq!(client.network_volume_gb("nope").await.unwrap(), None);
    let grown = client.grow_network_volume("vol1", 100).await.unwrap();
    assert_eq!((grown.id.as_str(), grown.size), ("vol1", 100));
    assert_eq!(client.network_volume_gb("vol1").await.unwrap(), Some(100));
    let smaller = client.grow_network_volume("vol1", 80).await.unwrap_err();
    assert!(smaller.to_string().contains("400"), "{smaller}");
    standin.state().faults.grow_refusals = 1;
    let refused = client.grow_network_volume("vol1", 150).await.unwrap_err();
    assert!(!refused.to_string().contains(&KEY[4..24]), "{refused}");
    assert_eq!(client.network_volume_gb("vol1").await.unwrap(), Some(100));
    assert!(client.grow_network_volume("nope", 150).await.is_err());
    let patches: Vec<_> = standin
        .state()
        .requests
        .iter()
        .filter(|(method, _, _)| method == "PATCH")
        .map(|(_, path, body)| (path.clone(), body.clone()))
        .collect();
    assert_eq!(
        patches[0],
        (
            "/v2/network-volumes/vol1".to_owned(),
            r#"{"size":100}"#.to_owned()
        )
    );
}
