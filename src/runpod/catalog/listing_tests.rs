use super::*;
use crate::runpod::catalog::wire::{DataCenterGpu, GpuDataCenter, GpuPrice, MaxCount};

pub(crate) fn gpu(
    id: &str,
    vram: u32,
    price: Option<f64>,
    stock: Stock,
    dcs: &[(&str, Stock)],
) -> CatalogGpu {
    CatalogGpu {
        id: id.into(),
        name: id.into(),
        memory: vram,
        secure: true,
        community: true,
        price: GpuPrice {
            secure: price,
            community: None,
        },
        max_count: MaxCount {
            secure: 8,
            community: 8,
        },
        availability: stock,
        data_centers: dcs
            .iter()
            .map(|(id, s)| GpuDataCenter {
                id: (*id).into(),
                availability: *s,
            })
            .collect(),
    }
}

fn catalog() -> Vec<CatalogGpu> {
    let mut community = gpu("RTX 3090", 24, Some(0.22), Stock::High, &[]);
    community.secure = false;
    vec![
        gpu(
            "H100 SXM",
            80,
            Some(2.69),
            Stock::Low,
            &[("EU-RO-1", Stock::Low)],
        ),
        gpu(
            "A100 PCIe",
            80,
            Some(1.19),
            Stock::None,
            &[("EU-RO-1", Stock::None)],
        ),
        gpu(
            "A40",
            48,
            Some(0.40),
            Stock::High,
            &[("US-TX-3", Stock::High)],
        ),
        gpu(
            "L40S",
            48,
            Some(0.79),
            Stock::Medium,
            &[("EU-RO-1", Stock::High)],
        ),
        gpu("RTX A6000", 48, Some(0.40), Stock::Medium, &[]),
        gpu("B200", 180, None, Stock::High, &[]),
        gpu("H200", 141, Some(0.0), Stock::Low, &[]),
        community,
    ]
}

fn ids(rows: &[GpuRow]) -> Vec<&str> {
    rows.iter().map(|r| r.id.as_str()).collect()
}

#[test]
fn gpus_sort_by_price_then_more_vram_then_id_unpriced_last_community_only_omitted() {
    let rows = gpu_rows(&catalog(), &GpuFilter::default());
    assert_eq!(
        ids(&rows),
        [
            "A40",
            "RTX A6000",
            "L40S",
            "A100 PCIe",
            "H100 SXM",
            "B200",
            "H200"
        ]
    );
    let text = gpus_text(&rows, &GpuFilter::default());
    assert_eq!(
        text,
        "\
ID         VRAM GB   $/H  MAX COUNT  STOCK
A40             48  0.40          8  HIGH
RTX A6000       48  0.40          8  MEDIUM
L40S            48  0.79          8  MEDIUM
A100 PCIe       80  1.19          8  NONE
H100 SXM        80  2.69          8  LOW
B200           180     -          8  HIGH
H200           141     -          8  LOW
"
    );
}

#[test]
fn each_filter_narrows_and_the_data_center_shows_its_own_stock() {
    let all = catalog();
    let with = |filter: GpuFilter| ids(&gpu_rows(&all, &filter)).join(",");
    assert_eq!(
        with(GpuFilter {
            min_vram: Some(80),
            ..GpuFilter::default()
        }),
        "A100 PCIe,H100 SXM,B200,H200"
    );
    assert_eq!(
        with(GpuFilter {
            max_price: Some(0.79),
            ..GpuFilter::default()
        }),
        "A40,RTX A6000,L40S"
    );
    assert_eq!(
        with(GpuFilter {
            in_stock: true,
            min_vram: Some(80),
            ..GpuFilter::default()
        }),
        "H100 SXM,B200,H200"
    );
    let eu = GpuFilter {
        data_center: Some("EU-RO-1".into()),
        ..GpuFilter::default()
    };
    let rows = gpu_rows(&all, &eu);
    assert_eq!(ids(&rows), ["L40S", "A100 PCIe", "H100 SXM"]);
    assert_eq!(
        rows[0].stock,
        Stock::High,
        "the stock in EU-RO-1, not overall"
    );
    let none = GpuFilter {
        min_vram: Some(200),
        in_stock: true,
        ..GpuFilter::default()
    };
    assert_eq!(
        gpus_text(&gpu_rows(&all, &none), &none),
        "No Secure Cloud GPU type matches with --min-vram 200 --in-stock.\n"
    );
}

#[test]
fn data_centers_volumes_and_templates_sort_count_and_say_when_empty() {
    let dc = |id: &str, stock: &[(&str, Stock)]| DataCenter {
        id: id.into(),
        name: format!("{id} name"),
        region: "EUROPE".into(),
        gpu_availability: stock
            .iter()
            .map(|(g, s)| DataCenterGpu {
                id: (*g).into(),
                availability: *s,
            })
            .collect(),
    };
    let text = datacenters_text(&[
        dc("US-TX-3", &[("A40", Stock::High)]),
        dc(
            "EU-RO-1",
            &[
                ("H100", Stock::Low),
                ("A100", Stock::None),
                ("L40S", Stock::High),
            ],
        ),
    ]);
    assert_eq!(
        text,
        "\
ID       NAME          REGION  GPU TYPES IN STOCK
EU-RO-1  EU-RO-1 name  EUROPE                   2
US-TX-3  US-TX-3 name  EUROPE                   1
"
    );
    assert_eq!(datacenters_text(&[]), "No data center was found.\n");
    let volume = |id: &str, name: &str| NetworkVolume {
        id: id.into(),
        name: name.into(),
        size: 100,
        data_center: "EU-RO-1".into(),
    };
    let text = volumes_text(&[volume("v2", "weights"), volume("v1", "datasets")]);
    assert!(
        text.starts_with("ID  NAME      SIZE GB  DATA CENTER\nv1  datasets"),
        "{text}"
    );
    assert_eq!(volumes_text(&[]), "The account has no network volume.\n");
    let template = |id: &str, name: &str, serverless: bool| Template {
        id: id.into(),
        name: name.into(),
        image: format!("{name}:1"),
        serverless,
    };
    let text = templates_text(&[
        template("t2", "zeta", false),
        template("t1", "alpha", false),
        template("t2", "zeta again", false),
        template("s1", "worker", true),
    ]);
    assert_eq!(
        text,
        "ID  NAME   IMAGE\nt1  alpha  alpha:1\nt2  zeta   zeta:1\n"
    );
    assert_eq!(
        templates_text(&[template("s1", "worker", true)]),
        "The account has no pod template.\n"
    );
}

#[test]
fn prices_keep_two_decimals_or_three() {
    assert_eq!(price_text(0.4), "0.40");
    assert_eq!(price_text(2.69), "2.69");
    assert_eq!(price_text(0.145), "0.145");
    assert_eq!(price_text(12.0), "12.00");
}
