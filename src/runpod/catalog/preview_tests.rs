use super::*;
use crate::runpod::catalog::listing::tests::gpu;
use crate::runpod::catalog::wire::Stock::{self, High, Low, None as Out};

fn catalog() -> Vec<CatalogGpu> {
    vec![
        gpu("A4000", 16, Some(0.17), High, &[("US-TX-3", High)]),
        gpu("A40", 48, Some(0.40), Out, &[("EU-RO-1", Out)]),
        gpu("L40S", 48, Some(0.79), Low, &[("EU-RO-1", High)]),
        gpu("A100", 80, Some(1.19), Low, &[("EU-RO-1", Low)]),
        gpu("H100", 80, Some(2.69), High, &[("US-TX-3", High)]),
        gpu("B200", 180, None, High, &[("US-KS-2", High)]),
    ]
}

fn target(toml: &str) -> RunpodTarget {
    toml::from_str(&format!("max_hours = 4\n{toml}")).expect("a Runpod target")
}

#[test]
fn fit_classes_by_spare_memory() {
    // (VRAM, estimate) → fit (POD-20): tight is under 10% of the memory spare.
    let table = [
        (48, Some(20.0), Fit::Ok),
        (48, Some(43.1), Fit::Ok),
        (48, Some(43.3), Fit::Tight),
        (48, Some(48.0), Fit::Tight),
        (48, Some(48.1), Fit::Small),
        (16, Some(23.4), Fit::Small),
        (80, None, Fit::Unknown),
        (80, Some(f64::NAN), Fit::Unknown),
        (80, Some(0.0), Fit::Unknown),
    ];
    for (vram, estimate, want) in table {
        assert_eq!(
            Fit::of(vram, estimate),
            want,
            "{vram} GB against {estimate:?}"
        );
    }
}

#[test]
fn listed_types_each_with_pod_price_stock_and_fit_and_the_highest_cost() {
    let t = target("gpu_types = [\"L40S\", \"A4000\", \"Gone\"]\ngpu_count = 2");
    let p = Preview::build(&t, &catalog(), Ok(23.4));
    assert_eq!(p.auto, AutoPick::NotAuto);
    let rows: Vec<(&str, Option<f64>, Fit, bool)> = p
        .types
        .iter()
        .map(|r| (r.id.as_str(), r.pod_price, r.fit, r.listed))
        .collect();
    assert_eq!(
        rows,
        vec![
            ("L40S", Some(1.58), Fit::Ok, true),
            ("A4000", Some(0.34), Fit::Small, true),
            ("Gone", None, Fit::Unknown, false),
        ]
    );
    assert_eq!(p.highest_rate, Some(1.58));
    assert!(p.unknown_prices, "`Gone` has no price");
    assert_eq!(p.small(), vec!["A4000"]);
    let text = p.lines().join("\n");
    assert!(
        text.contains("VRAM    23.4 GB per GPU (estimate)"),
        "{text}"
    );
    assert!(!text.contains("auto's floor"), "{text}");
    assert!(
        text.contains("L40S  USD 1.58/h  48 GB  stock LOW  fit ok"),
        "{text}"
    );
    assert!(text.contains("Gone  not in the Runpod catalog"), "{text}");
    assert!(
        text.contains("warning `A4000` has less VRAM than the estimate"),
        "{text}"
    );
    assert!(
        text.contains("at most USD 6.32 in max_hours = 4 at the highest listed rate; some types have no listed price"),
        "{text}"
    );
}

#[test]
fn auto_shows_its_pick_and_floor_and_bounds_the_cost_by_every_candidate() {
    let t = target("gpu_types = \"auto\"");
    let p = Preview::build(&t, &catalog(), Ok(30.0));
    let AutoPick::Order(order) = &p.auto else {
        panic!("auto picks: {:?}", p.auto)
    };
    let ids: Vec<&str> = order.iter().map(|c| c.gpu_type.as_str()).collect();
    // The floor of 30 GB drops the A4000; the A40 is out of stock but cheaper (POD-13).
    assert_eq!(ids, vec!["A40", "L40S", "A100", "H100", "B200"]);
    assert_eq!(p.floor, Floor::Estimate(30.0));
    assert_eq!(p.highest_rate, Some(2.69));
    assert!(p.unknown_prices, "B200 has no listed price");
    let text = p.lines().join("\n");
    assert!(
        text.contains("auto's floor: the VRAM estimate of 30.0 GB (floor 30 GB)"),
        "{text}"
    );
    assert!(
        text.contains("auto    would pick A40 (48 GB, USD 0.40/h, reported out of stock) now"),
        "{text}"
    );

    let bounded = target("gpu_types = \"auto\"\nmin_vram_gb = 40\nmax_price_per_hour = 1.0");
    let p = Preview::build(&bounded, &catalog(), Err("no config.json".into()));
    assert_eq!(p.floor, Floor::Set(40));
    assert_eq!(p.highest_rate, Some(0.79));
    assert!(!p.unknown_prices);
    assert!(p.types.iter().all(|r| r.fit == Fit::Unknown));
    let text = p.lines().join("\n");
    assert!(
        text.contains("VRAM    no estimate: no config.json"),
        "{text}"
    );
    assert!(text.contains("auto's floor: min_vram_gb = 40"), "{text}");
    assert!(
        text.contains("at most USD 3.16 in max_hours = 4 at the highest rate"),
        "{text}"
    );
}

#[test]
fn auto_with_nothing_to_pick_says_why_and_no_cost() {
    let t = target("gpu_types = \"auto\"\nmin_vram_gb = 500");
    let p = Preview::build(&t, &catalog(), Ok(30.0));
    assert!(matches!(&p.auto, AutoPick::Nothing(why) if why.contains("min_vram_gb = 500")));
    let text = p.lines().join("\n");
    assert!(
        text.contains("auto    would find nothing: no Secure Cloud GPU type in stock"),
        "{text}"
    );
    assert!(text.contains("cost    unknown: no listed price"), "{text}");
}

#[test]
fn more_auto_candidates_than_shown_are_counted() {
    let mut gpus = catalog();
    for i in 0..4 {
        gpus.push(gpu(
            &format!("X{i}"),
            96,
            Some(3.0 + f64::from(i)),
            High,
            &[],
        ));
    }
    let p = Preview::build(&target("gpu_types = \"auto\""), &gpus, Ok(30.0));
    assert_eq!(p.types.len(), AUTO_SHOWN);
    assert_eq!(p.more, 4);
    assert!(p.lines().join("\n").contains("… and 4 more"));
}

#[test]
fn the_cap_says_when_the_pod_is_snapshotted_and_deleted_and_warns_under_30_minutes() {
    // (cap, gpu_count) with H100 at 2.69/h → the POD-23 smallest cap, if any, and the
    // snapshot's spend: 95% of the cap, or 15 minutes of the pod before it (POD-41).
    let table = [
        (20.0, 1, None, 19.0),
        (1.0, 1, Some(1.345), 0.33),
        (2.0, 2, Some(2.69), 0.66),
        (0.5, 2, Some(2.69), 0.0),
    ];
    for (cap, count, smallest, snapshot) in table {
        let t = target(&format!(
            "gpu_types = [\"H100\"]\nmax_cost_usd = {cap}\ngpu_count = {count}"
        ));
        let p = Preview::build(&t, &catalog(), Ok(30.0));
        assert_eq!(p.cap_too_small(), smallest, "cap {cap}, {count} GPUs");
        let text = p.lines().join("\n");
        assert!(
            text.contains(&format!(
                "max_cost_usd = {}: snapshot at USD {snapshot:.2} (95%, or 15 min before the cap), pod deleted at USD {cap:.2}",
                trim(cap),
            )),
            "{text}"
        );
        assert_eq!(
            text.contains("buys less than 30 minutes"),
            smallest.is_some(),
            "{text}"
        );
    }
}

#[test]
fn the_hint_gives_the_most_gpus_per_pod_and_the_highest_cost() {
    let mut gpus = catalog();
    gpus[4].max_count.secure = 4; // H100
    let listed = target("gpu_types = [\"H100\", \"L40S\"]\ngpu_count = 2");
    let p = Preview::build(&listed, &gpus, Ok(30.0));
    assert_eq!(
        p.hint(&gpus),
        "up to 8 GPUs per pod with the chosen types; at most USD 21.52 in 4 h"
    );
    let only = target("gpu_types = [\"H100\"]");
    let p = Preview::build(&only, &gpus, Ok(30.0));
    assert_eq!(
        p.hint(&gpus),
        "up to 4 GPUs per pod with the chosen types; at most USD 10.76 in 4 h"
    );
    let auto = Preview::build(&target("gpu_types = \"auto\""), &gpus, Ok(30.0));
    assert_eq!(
        auto.hint(&gpus),
        "up to 8 GPUs per pod on Secure Cloud; at most USD 10.76 in 4 h at the listed prices (some unlisted)"
    );
    let gone = Preview::build(&target("gpu_types = [\"Gone\"]"), &gpus, Ok(30.0));
    assert_eq!(
        gone.hint(&gpus),
        "no GPU count listed for the chosen types; cost unknown: no listed price"
    );
}

#[test]
fn listed_types_with_auto_data_centers_show_the_pick_or_why_the_run_would_fail_and_the_stock_there()
{
    let t = target("gpu_types = [\"L40S\", \"A100\"]\ndata_center_ids = \"auto\"");
    let text = Preview::build(&t, &catalog(), Ok(30.0)).lines().join("\n");
    assert!(text.contains("data centers (auto): EU-RO-1"), "{text}");
    let t = target("gpu_types = [\"A40\"]\ndata_center_ids = \"auto\"");
    let text = Preview::build(&t, &catalog(), Ok(30.0)).lines().join("\n");
    assert!(
        text.contains("no data center has one in stock")
            && text.contains("the run would fail before any pod"),
        "{text}"
    );
    // Listed data centers: the stock there, not overall.
    let t = target("gpu_types = [\"H100\", \"L40S\"]\ndata_center_ids = [\"EU-RO-1\"]");
    let p = Preview::build(&t, &catalog(), Ok(30.0));
    let stock: Vec<Stock> = p.types.iter().map(|r| r.stock).collect();
    assert_eq!(stock, [Out, High]);
}
