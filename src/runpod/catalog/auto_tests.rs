use super::*;
use crate::runpod::catalog::listing::tests::gpu;
use crate::runpod::catalog::wire::Stock::{High, Low, Medium, None as Out};

fn catalog() -> Vec<CatalogGpu> {
    vec![
        gpu("A4000", 16, Some(0.17), High, &[("US-TX-3", High)]),
        gpu("A40", 48, Some(0.40), Out, &[("EU-RO-1", Out)]),
        gpu("RTX A6000", 48, Some(0.49), Out, &[]),
        gpu("L40", 48, Some(0.69), Out, &[("US-TX-3", Out)]),
        gpu(
            "L40S",
            48,
            Some(0.79),
            Medium,
            &[("EU-RO-1", High), ("US-TX-3", Low)],
        ),
        gpu("A100", 80, Some(1.19), Low, &[("EU-RO-1", Low)]),
        gpu("A100 SXM", 80, Some(0.79), Out, &[("EU-RO-1", Out)]),
        gpu(
            "H100",
            80,
            Some(2.69),
            High,
            &[("US-TX-3", High), ("EU-RO-1", Low)],
        ),
        gpu("B200", 180, None, High, &[("US-KS-2", High)]),
    ]
}

fn request(floor: Floor, max_price: Option<f64>, placement: Placement) -> Request {
    Request {
        gpu_count: 1,
        floor,
        max_price,
        placement,
    }
}

fn names(order: &[Candidate]) -> Vec<String> {
    order
        .iter()
        .map(|c| {
            let stock = if c.in_stock { "" } else { "*" };
            if c.data_centers.is_empty() {
                format!("{}{stock}", c.gpu_type)
            } else {
                format!("{}{stock}@{}", c.gpu_type, c.data_centers.join("+"))
            }
        })
        .collect()
}

#[test]
fn the_order_of_each_request_cheapest_first_with_cheaper_lagging_types_first() {
    let eu = || Placement::Listed(vec!["EU-RO-1".into()]);
    // (floor, cap, placement) → the order, `*` out of stock, `@` the data centers.
    let table: Vec<(Floor, Option<f64>, Placement, Vec<&str>)> = vec![
        (
            Floor::None,
            None,
            Placement::Any,
            vec!["A4000", "L40S", "A100", "H100", "B200"],
        ),
        // 48 GB: L40S is the cheapest in stock; A40, RTX A6000 and L40 are cheaper and
        // out of stock: tried first (3 at most), cheapest first.
        (
            Floor::Set(48),
            None,
            Placement::Any,
            vec!["A40*", "RTX A6000*", "L40*", "L40S", "A100", "H100", "B200"],
        ),
        // The estimate 40.2 GB rounds up to a 41 GB floor; the cap leaves out the
        // unpriced B200 and anything above 1.2.
        (
            Floor::Estimate(40.2),
            Some(1.2),
            Placement::Any,
            vec!["A40*", "RTX A6000*", "L40*", "L40S", "A100"],
        ),
        // In EU-RO-1: stock there counts; L40 names only US-TX-3 (excluded), RTX A6000
        // names none (kept); A100 SXM costs as much as L40S, not less (left out); the
        // listed data center binds every call.
        (
            Floor::Set(48),
            None,
            eu(),
            vec![
                "A40*@EU-RO-1",
                "RTX A6000*@EU-RO-1",
                "L40S@EU-RO-1",
                "A100@EU-RO-1",
                "H100@EU-RO-1",
            ],
        ),
        // Automatic data centers: each one with a chosen type in stock, ordered by the
        // cheapest such type it has; lagging types get no list.
        (
            Floor::Set(80),
            None,
            Placement::Auto,
            vec![
                "A100 SXM*",
                "A100@EU-RO-1+US-TX-3+US-KS-2",
                "H100@EU-RO-1+US-TX-3+US-KS-2",
                "B200@EU-RO-1+US-TX-3+US-KS-2",
            ],
        ),
    ];
    for (floor, cap, placement, want) in table {
        let walk = Walk::new(request(floor, cap, placement.clone()));
        let order = walk.first(&catalog()).unwrap();
        assert_eq!(names(&order), want, "{floor:?} {cap:?} {placement:?}");
    }
}

#[test]
fn a_reread_leaves_out_what_was_tried_and_counts_lagging_types_over_the_walk() {
    let mut walk = Walk::new(request(Floor::Set(48), None, Placement::Any));
    let first = walk.first(&catalog()).unwrap();
    walk.tried(&first[0]);
    walk.tried(&first[1]);
    // A fresh read: L40 is back in stock and now the cheapest; nothing untried is
    // cheaper.
    let mut now = catalog();
    now[3].availability = Low;
    let order = walk.order(&now).unwrap();
    assert_eq!(names(&order), ["L40", "L40S", "A100", "H100", "B200"]);
    let mut back = catalog();
    back[1].availability = High;
    // A40 was tried: never offered again, even in stock; of the lagging types one try
    // is left (2 of 3 used).
    assert_eq!(
        names(&walk.order(&back).unwrap()),
        ["L40*", "L40S", "A100", "H100", "B200"]
    );
    for c in &order {
        walk.tried(c);
    }
    assert_eq!(walk.order(&catalog()).unwrap(), []);
}

#[test]
fn nothing_in_stock_fails_naming_the_request_and_no_data_center_names_the_types() {
    let walk = Walk::new(request(Floor::Estimate(200.4), Some(3.0), Placement::Any));
    assert_eq!(
        walk.first(&catalog()).unwrap_err().to_string(),
        "no Secure Cloud GPU type in stock matches `gpu_types = \"auto\"`, gpu_count = 1, \
the VRAM estimate of 200.4 GB (floor 201 GB), max_price_per_hour = 3"
    );
    let mut four = request(Floor::Set(80), None, Placement::Any);
    four.gpu_count = 4;
    let mut small = catalog();
    for g in &mut small {
        g.max_count.secure = 2;
    }
    assert_eq!(
        Walk::new(four).first(&small).unwrap_err().to_string(),
        "no Secure Cloud GPU type in stock matches `gpu_types = \"auto\"`, gpu_count = 4, min_vram_gb = 80"
    );
    // In stock overall, but no data center lists it in stock.
    let mut odd = catalog();
    for g in &mut odd {
        for dc in &mut g.data_centers {
            dc.availability = Out;
        }
    }
    let walk = Walk::new(request(Floor::Set(80), Some(2.0), Placement::Auto));
    assert_eq!(
        walk.first(&odd).unwrap_err(),
        AutoError::NoDataCenter {
            types: "A100".into(),
            gpu_count: 1
        }
    );
}

#[test]
fn data_centers_for_listed_types_follow_the_cheapest_type_in_stock_there() {
    assert_eq!(
        auto_data_centers(&catalog(), &["H100", "L40S"]),
        ["EU-RO-1", "US-TX-3"]
    );
    assert_eq!(
        auto_data_centers(&catalog(), &["A40"]),
        Vec::<String>::new()
    );
}

#[test]
fn the_driver_state_takes_each_type_once_and_keeps_the_order_when_a_reread_fails() {
    let walk = Walk::new(request(Floor::Set(80), None, Placement::Auto));
    let first = walk.first(&catalog()).unwrap();
    let mut auto = AutoState::new(walk, first);
    assert_eq!(auto.order(), ["A100 SXM", "A100", "H100", "B200"]);
    let taken = auto.take("A100 SXM").unwrap();
    assert!(taken.data_centers.is_empty() && !taken.in_stock);
    assert_eq!(
        describe(&taken),
        "A100 SXM (80 GB, USD 0.79/h, reported out of stock)"
    );
    assert_eq!(
        auto.take("A100").unwrap().data_centers,
        ["EU-RO-1", "US-TX-3", "US-KS-2"]
    );
    assert_eq!(
        auto.reorder(Err("HTTP 500".into())).unwrap_err(),
        "the GPU catalog could not be read again: HTTP 500"
    );
    let mut gone = catalog();
    for g in &mut gone {
        g.availability = Out;
    }
    assert_eq!(
        auto.reorder(Ok(gone)).unwrap_err(),
        "the GPU catalog shows no untried type in stock"
    );
    assert_eq!(auto.reorder(Ok(catalog())).unwrap(), ["H100", "B200"]);
}
