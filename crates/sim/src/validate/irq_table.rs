//! `kind = "irq_table"` in an experiment's `[[check]]`: see [`IrqTable`].

use super::prelude::*;

/// Seed 001's IRQ assignment (Table 3): the IRQ of every INTx function of `platform` with
/// `cards` in its ports (`PORT=FUNCTIONS`, as `irqlab plan swizzle --card`), named in bus
/// order, with the ports' INTXSWZCTRL as the platform file has them (`unswizzled`) and with
/// the values `irqlab plan swizzle` chooses from the population and the platform
/// (`swizzled`); each IRQ's functions exactly as published (in any order).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IrqTable {
    pub id: String,
    pub platform: String,
    pub cards: Vec<String>,
    pub unswizzled: BTreeMap<String, Vec<String>>,
    pub swizzled: BTreeMap<String, Vec<String>>,
    pub published_text: String,
    pub source: String,
}

impl RowKind for IrqTable {
    fn id(&self) -> &str {
        &self.id
    }
    fn problem(&self) -> Option<&'static str> {
        if bad_cards(&self.cards) {
            return Some(BAD_CARDS);
        }
        self.unswizzled
            .keys()
            .chain(self.swizzled.keys())
            .any(|k| k.parse::<u8>().is_err())
            .then_some("an irq_table row's tables are keyed by IRQ number (16 = [\"eth0\"])")
    }
    fn runs(&self) -> Vec<&str> {
        // Routing is worked out on the platform's topology: no run.
        Vec::new()
    }
    fn judged(&self) -> Judged {
        Judged::Share {
            pass_share: SHAPE_PASS_SHARE,
        }
    }
    fn evaluate(&self, exp: &RowContext<'_>, _: &BTreeMap<String, RunResult>) -> ValidationRow {
        let IrqTable {
            id,
            platform,
            cards,
            unswizzled,
            swizzled,
            published_text,
            source,
        } = self;
        let mut row = exp.row(id, "IRQ of each INTx function".into(), source);
        row.published_text = published_text.clone();
        row.tolerance = "exact".into();
        let show = |m: &BTreeMap<u8, Vec<String>>| {
            m.iter()
                .map(|(irq, names)| format!("IRQ{irq}: {}", names.join(" ")))
                .collect::<Vec<_>>()
                .join("; ")
        };
        let published = |m: &BTreeMap<String, Vec<String>>| {
            irq_sets(
                m.iter()
                    .map(|(irq, names)| (irq.parse().expect("checked when loaded"), names)),
            )
        };
        let (pub_before, pub_after) = (published(unswizzled), published(swizzled));
        row.published = format!(
            "none: {} | swizzled: {}",
            show(&pub_before),
            show(&pub_after)
        );
        let plan = exp.population(platform, cards).and_then(|p| p.plan());
        match plan {
            Err(e) => {
                row.simulated = "cannot be worked out".into();
                row.holds = Some(false);
                row.detail = e.to_string();
            }
            Ok(plan) => {
                let sorted = |m: &BTreeMap<u8, Vec<String>>| {
                    irq_sets(m.iter().map(|(&irq, names)| (irq, names)))
                };
                let (before, after) =
                    (sorted(&plan.table_before), sorted(&plan.table_after));
                row.simulated =
                    format!("none: {} | swizzled: {}", show(&before), show(&after));
                let ok = before == pub_before && after == pub_after;
                row.holds = Some(ok);
                row.detail = format!(
                    "INTXSWZCTRL planned: {}",
                    plan.registers
                        .iter()
                        .map(|r| format!("{} {:02X}h", r.port, r.after))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        }
        row.verdict = if row.holds == Some(true) {
            Verdict::Pass
        } else {
            Verdict::Fail
        };
        row
    }
}

/// An IRQ table with each IRQ's names sorted: tables that list the same functions under each
/// IRQ, in any order, compare equal.
fn irq_sets<'a>(rows: impl Iterator<Item = (u8, &'a Vec<String>)>) -> BTreeMap<u8, Vec<String>> {
    rows.map(|(irq, names)| {
        let mut names = names.clone();
        names.sort();
        (irq, names)
    })
    .collect()
}
