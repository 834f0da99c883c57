use super::*;

fn figure(value: f64, weight: f64, events: f64, worse: Worse, headline: bool) -> Figure {
    Figure {
        value,
        weight,
        events,
        worse,
        headline,
        points: false,
    }
}

#[test]
fn headline_first_then_by_weight_small_ones_folded() {
    use Worse::{Neither, Up};
    let old = BTreeMap::from([
        (
            "rate.s2c.kbps".to_string(),
            figure(436.0, 0.9, 900.0, Up, true),
        ),
        (
            "rate.c2s.kbps".to_string(),
            figure(20.0, 0.1, 900.0, Up, true),
        ),
        ("kbps.big".to_string(), figure(400.0, 0.8, 900.0, Up, false)),
        ("kbps.small".to_string(), figure(1.0, 0.1, 900.0, Up, false)),
        ("kbps.hello".to_string(), figure(0.1, 0.001, 1.0, Up, false)),
        (
            "field.tiny.share_percent".to_string(),
            figure(0.004, 0.00004, 900.0, Neither, false),
        ),
    ]);
    let mut new = old.clone();
    new.get_mut("rate.s2c.kbps").unwrap().value = 242.0;
    new.get_mut("kbps.big").unwrap().value = 200.0;
    new.get_mut("kbps.small").unwrap().value = 2.0;
    new.get_mut("kbps.hello").unwrap().value = 0.147;
    new.get_mut("field.tiny.share_percent").unwrap().value = 0.008;
    let changes = compare(&old, &new);
    let order: Vec<(&str, bool)> = changes
        .iter()
        .map(|c| (c.figure.as_str(), c.folded))
        .collect();
    assert_eq!(
        order,
        [
            ("rate.c2s.kbps", false),
            ("rate.s2c.kbps", false),
            // -50 % on 80 % of the bytes outranks +100 % on 10 %.
            ("kbps.big", false),
            ("kbps.small", false),
            ("kbps.hello", true),
            ("field.tiny.share_percent", true),
        ]
    );
    // Savings never fail; the headline is judged by default, folded figures never.
    assert!(failing(&changes, false, 25.0).is_empty());
    let named: Vec<&str> = failing(&changes, true, 25.0)
        .iter()
        .map(|c| c.figure.as_str())
        .collect();
    assert_eq!(named, ["kbps.small", "kbps.hello"]);
    let back = compare(&new, &old);
    let worse: Vec<&str> = failing(&back, false, 25.0)
        .iter()
        .map(|c| c.figure.as_str())
        .collect();
    assert_eq!(worse, ["rate.s2c.kbps"]);
}

#[test]
fn regressions_go_the_worse_way() {
    let change = |old, new, worse| Change {
        figure: "x".into(),
        old: Some(old),
        new,
        weight: 1.0,
        worse,
        headline: true,
        points: false,
        folded: false,
    };
    assert_eq!(change(60.0, Some(30.0), Worse::Down).regression(), 0.5);
    assert_eq!(change(60.0, Some(90.0), Worse::Down).regression(), 0.0);
    assert_eq!(change(10.0, Some(15.0), Worse::Up).regression(), 0.5);
    assert_eq!(change(10.0, Some(5.0), Worse::Up).regression(), 0.0);
    assert_eq!(change(10.0, Some(50.0), Worse::Neither).regression(), 0.0);
    assert_eq!(
        change(0.0, Some(1.0), Worse::Up).regression(),
        f64::INFINITY
    );
    assert_eq!(change(1.0, None, Worse::Up).regression(), 0.0);
    // Loss in percent: by its percentage points.
    let loss = |old, new| Change {
        points: true,
        ..change(old, Some(new), Worse::Up)
    };
    assert!((loss(1.2, 1.8).regression() - 0.006).abs() < 1e-9);
    assert_eq!(loss(0.0, 30.0).regression(), 0.3);
}
