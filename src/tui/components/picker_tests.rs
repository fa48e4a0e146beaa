use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::*;
use crate::runpod::catalog::listing::tests::gpu;
use crate::runpod::catalog::wire::DataCenterGpu;
use crate::runpod::catalog::wire::Stock::{High, Low, None as Out};

fn press(picker: &mut Picker, keys: &str) -> Outcome {
    let mut last = Outcome::Pending;
    for c in keys.chars() {
        let code = match c {
            '\n' => KeyCode::Enter,
            '\u{1b}' => KeyCode::Esc,
            '\u{8}' => KeyCode::Backspace,
            c => KeyCode::Char(c),
        };
        last = picker.handle_key(KeyEvent::new(code, KeyModifiers::NONE));
    }
    last
}

fn gpus() -> Vec<CatalogGpu> {
    vec![
        gpu("A4000", 16, Some(0.17), High, &[("US-TX-3", High)]),
        gpu(
            "L40S",
            48,
            Some(0.79),
            Low,
            &[("EU-RO-1", High), ("US-TX-3", Low)],
        ),
        gpu("A40", 48, Some(0.40), Out, &[("EU-RO-1", Out)]),
        gpu("H100", 80, Some(2.69), High, &[("US-TX-3", High)]),
        gpu("B200", 180, None, High, &[]),
    ]
}

fn gpu_picker(current: &ListOrAuto) -> Picker {
    Picker::gpu_types(
        "targets.gpu.gpu_types".into(),
        &gpus(),
        2,
        Some(23.4),
        current,
    )
}

fn shown(picker: &Picker) -> Vec<String> {
    picker
        .rows()
        .into_iter()
        .map(|r| r.unwrap_or_else(|| "<top>".into()))
        .collect()
}

#[test]
fn each_sort_keeps_the_toggled_entries_on_top_in_their_order() {
    let mut p = gpu_picker(&ListOrAuto::List(vec!["H100".into()]));
    assert_eq!(
        shown(&p),
        ["<top>", "H100", "A4000", "A40", "L40S", "B200"].map(String::from)
    );
    // `o`: by VRAM, most first; then by data centers with stock, most first.
    press(&mut p, "o");
    assert!(p.title().contains("by VRAM"), "{}", p.title());
    assert_eq!(
        shown(&p),
        ["<top>", "H100", "B200", "A40", "L40S", "A4000"].map(String::from)
    );
    press(&mut p, "o");
    assert_eq!(
        shown(&p),
        ["<top>", "H100", "L40S", "A4000", "A40", "B200"].map(String::from)
    );
    press(&mut p, "o");
    assert!(p.title().contains("by price"), "{}", p.title());
}

#[test]
fn space_toggles_in_order_and_j_k_reorder_the_toggled() {
    let mut p = gpu_picker(&ListOrAuto::Auto("auto".into()));
    // By price, the unpriced B200 last.
    assert_eq!(
        shown(&p),
        ["<top>", "A4000", "A40", "L40S", "H100", "B200"].map(String::from)
    );
    press(&mut p, "jjjj "); // H100 first
    assert_eq!(p.toggled(), ["H100"]);
    press(&mut p, "jjj "); // the cursor follows H100 to row 1; 3 down: L40S
    assert_eq!(p.toggled(), ["H100", "L40S"]);
    // The cursor follows L40S (second toggled); K moves it earlier.
    press(&mut p, "K");
    assert_eq!(p.toggled(), ["L40S", "H100"]);
    assert_eq!(p.current().as_deref(), Some("L40S"));
    press(&mut p, "J");
    assert_eq!(p.toggled(), ["H100", "L40S"]);
    assert_eq!(
        press(&mut p, "\n"),
        Outcome::Done(Picked::List(vec!["H100".into(), "L40S".into()]))
    );
    // Space on a toggled entry removes it.
    press(&mut p, " ");
    assert_eq!(p.toggled(), ["H100"]);
}

#[test]
fn a_small_type_is_dim_cannot_be_toggled_on_but_can_be_removed() {
    let mut p = gpu_picker(&ListOrAuto::List(vec!["A4000".into()]));
    // Chosen before: on top, under the cursor, removable.
    assert_eq!(p.current().as_deref(), Some("A4000"));
    press(&mut p, " ");
    assert!(p.toggled().is_empty());
    // Untoggled, it sorts by its price: first, under the cursor.
    assert_eq!(p.current().as_deref(), Some("A4000"));
    press(&mut p, " ");
    assert!(p.toggled().is_empty(), "a small type is not toggled on");
    assert!(
        p.note.as_deref().unwrap_or_default().contains("small"),
        "{:?}",
        p.note
    );
    assert_eq!(press(&mut p, "\n"), Outcome::Pending);
    assert!(
        p.lines(usize::MAX)
            .iter()
            .any(|(l, dim)| *dim && l.contains("A4000") && l.contains("small"))
    );
}

#[test]
fn the_top_row_is_auto_and_enter_on_an_entry_with_nothing_toggled_picks_it() {
    let mut p = gpu_picker(&ListOrAuto::Auto("auto".into()));
    assert_eq!(press(&mut p, "\n"), Outcome::Done(Picked::Auto));
    assert_eq!(
        press(&mut p, "jj\n"),
        Outcome::Done(Picked::List(vec!["A40".into()]))
    );
    assert_eq!(press(&mut p, "\u{1b}"), Outcome::Cancel);
    // `t` only where offered.
    assert_eq!(press(&mut p, "t"), Outcome::Pending);
    let mut typed = gpu_picker(&ListOrAuto::Auto("auto".into())).with_typing();
    assert_eq!(press(&mut typed, "t"), Outcome::Type);
}

#[test]
fn the_filter_narrows_the_rows_enter_keeps_it_esc_clears_it() {
    let mut p = gpu_picker(&ListOrAuto::List(vec!["H100".into()]));
    press(&mut p, "/a4");
    assert!(p.filtering());
    // Typing `j` while filtering is text, not a move.
    assert_eq!(
        shown(&p),
        ["<top>", "H100", "A4000", "A40"].map(String::from)
    );
    press(&mut p, "0\n");
    assert!(!p.filtering());
    assert!(p.title().contains("filter `a40`"), "{}", p.title());
    assert_eq!(
        shown(&p),
        ["<top>", "H100", "A4000", "A40"].map(String::from)
    );
    press(&mut p, "/\u{1b}");
    assert_eq!(shown(&p).len(), 6);
}

#[test]
fn the_gpu_rows_show_the_pod_price_vram_stock_data_centers_and_fit() {
    let p = gpu_picker(&ListOrAuto::Auto("auto".into()));
    let text: Vec<String> = p.lines(usize::MAX).into_iter().map(|(l, _)| l).collect();
    assert!(
        text[0].contains("ID") && text[0].contains("FIT"),
        "{text:?}"
    );
    assert_eq!(text[1].trim(), "auto");
    // L40S: 0.79 × 2 GPUs; stock in 2 data centers; 48 GB against 23.4: ok.
    let l40s = text.iter().find(|l| l.contains("L40S")).expect("L40S");
    let cells: Vec<&str> = l40s.split_whitespace().collect();
    assert_eq!(cells, ["[", "]", "L40S", "1.58", "48", "LOW", "2", "ok"]);
    assert!(
        p.title().contains("2 per pod, estimate 23.4 GB per GPU"),
        "{}",
        p.title()
    );
    let b200 = text.iter().find(|l| l.contains("B200")).expect("B200");
    assert!(b200.contains(" - "), "{b200}");
}

// At 80 columns a long GPU ID is cut with `…` so that price, stock and fit still show.
#[test]
fn a_long_id_is_cut_so_the_fit_column_shows_in_a_narrow_picker() {
    let mut all = gpus();
    all.push(gpu(
        "NVIDIA RTX PRO 6000 Blackwell Server Edition",
        96,
        Some(1.19),
        High,
        &[("US-TX-3", High)],
    ));
    let p = Picker::gpu_types(
        "targets.gpu.gpu_types".into(),
        &all,
        1,
        Some(23.4),
        &ListOrAuto::Auto("auto".into()),
    );
    let text: Vec<String> = p.lines(60).into_iter().map(|(l, _)| l).collect();
    assert!(
        text[0].contains("STOCK") && text[0].contains("FIT"),
        "{text:?}"
    );
    let long = text
        .iter()
        .find(|l| l.contains("NVIDIA RTX"))
        .expect("the long one");
    assert!(
        long.contains('…') && long.trim_end().ends_with("ok"),
        "{long}"
    );
    assert!(text.iter().all(|l| l.chars().count() <= 60), "{text:?}");
}

#[test]
fn a_chosen_type_the_catalog_no_longer_lists_is_kept_and_said() {
    let mut p = gpu_picker(&ListOrAuto::List(vec!["Gone".into(), "H100".into()]));
    assert!(
        p.lines(usize::MAX)
            .iter()
            .any(|(l, _)| l.contains("[1]  Gone  (not in the listing)"))
    );
    assert_eq!(
        press(&mut p, "j\n"),
        Outcome::Done(Picked::List(vec!["Gone".into(), "H100".into()]))
    );
}

#[test]
fn data_centers_sort_by_id_or_region_and_volumes_and_templates_pick_one() {
    let center = |id: &str, region: &str| DataCenter {
        id: id.into(),
        name: id.into(),
        region: region.into(),
        gpu_availability: vec![DataCenterGpu {
            id: "A40".into(),
            availability: High,
        }],
    };
    let centers = [
        center("US-TX-3", "NORTH_AMERICA"),
        center("EU-RO-1", "EUROPE"),
        center("CA-MTL-1", "NORTH_AMERICA"),
    ];
    let mut p = Picker::data_centers("targets.gpu.data_center_ids".into(), &centers, None);
    assert_eq!(
        shown(&p),
        ["<top>", "CA-MTL-1", "EU-RO-1", "US-TX-3"].map(String::from)
    );
    press(&mut p, "o");
    assert_eq!(
        shown(&p),
        ["<top>", "EU-RO-1", "CA-MTL-1", "US-TX-3"].map(String::from)
    );
    assert_eq!(
        press(&mut p, "j jj \n"),
        Outcome::Done(Picked::List(vec!["EU-RO-1".into(), "US-TX-3".into()]))
    );

    let volumes = [NetworkVolume {
        id: "vol1".into(),
        name: "weights".into(),
        size: 200,
        data_center: "EU-RO-1".into(),
    }];
    let mut v = Picker::volumes(
        "targets.gpu.network_volume_id".into(),
        &volumes,
        Some("vol1"),
    );
    assert_eq!(
        v.current().as_deref(),
        Some("vol1"),
        "opens on the configured volume"
    );
    assert_eq!(
        press(&mut v, " \n"),
        Outcome::Done(Picked::One("vol1".into()))
    );
    assert_eq!(press(&mut v, "k\n"), Outcome::Done(Picked::Unset));

    let template = |id: &str, image: &str, serverless: bool| Template {
        id: id.into(),
        name: id.into(),
        image: image.into(),
        serverless,
    };
    let templates = [
        template("a", "img:1", false),
        template("b", "", false),
        template("c", "srv:1", true),
    ];
    let mut t = Picker::templates("targets.gpu.image".into(), &templates, None);
    assert_eq!(shown(&t), ["<top>", "img:1", ""].map(String::from));
    assert_eq!(
        press(&mut t, "jj\n"),
        Outcome::Pending,
        "a template without an image"
    );
    assert_eq!(
        press(&mut t, "k\n"),
        Outcome::Done(Picked::One("img:1".into()))
    );
    assert_eq!(press(&mut t, "k\n"), Outcome::Done(Picked::Unset));

    // Two templates of one image are one row naming both; the row picks the image.
    let templates = [
        template("z-second", "img:1", false),
        template("a-first", "img:1", false),
        template("b", "img:2", false),
    ];
    let mut t = Picker::templates("targets.gpu.image".into(), &templates, None);
    assert_eq!(shown(&t), ["<top>", "img:1", "img:2"].map(String::from));
    let mut area = ratatui::buffer::Buffer::empty(ratatui::layout::Rect::new(0, 0, 100, 12));
    t.render(area.area, &mut area, crate::tui::theme::Theme::new(false));
    let text: String = area
        .content()
        .iter()
        .map(ratatui::buffer::Cell::symbol)
        .collect();
    assert!(text.contains("a-first, z-second"), "{text}");
    assert_eq!(
        press(&mut t, "j\n"),
        Outcome::Done(Picked::One("img:1".into()))
    );
}

#[test]
fn a_configured_list_opens_on_its_first_entry_so_enter_keeps_it() {
    let mut p = gpu_picker(&ListOrAuto::List(vec!["H100".into(), "L40S".into()]));
    assert_eq!(
        press(&mut p, "\n"),
        Outcome::Done(Picked::List(vec!["H100".into(), "L40S".into()]))
    );
    // Esc clears a kept filter before it cancels.
    press(&mut p, "/a4\n");
    assert_eq!(press(&mut p, "\u{1b}"), Outcome::Pending);
    assert_eq!(shown(&p).len(), 6);
    assert_eq!(press(&mut p, "\u{1b}"), Outcome::Cancel);
    // `auto` is the top row.
    let mut p = gpu_picker(&ListOrAuto::List(vec!["H100".into()]));
    press(&mut p, "k");
    assert_eq!(press(&mut p, "\n"), Outcome::Done(Picked::Auto));
}

#[test]
fn a_type_that_cannot_hold_gpu_count_cards_cannot_be_toggled_on() {
    let mut gpus = gpus();
    gpus[3].max_count.secure = 1; // H100: one per pod
    let mut p = Picker::gpu_types(
        "targets.gpu.gpu_types".into(),
        &gpus,
        2,
        Some(23.4),
        &ListOrAuto::Auto("auto".into()),
    );
    press(&mut p, "jjjj ");
    assert_eq!(p.current().as_deref(), Some("H100"));
    assert!(p.toggled().is_empty());
    assert_eq!(
        p.note.as_deref(),
        Some("`H100` cannot be chosen: a pod has at most 1 of it, not gpu_count = 2")
    );
}
