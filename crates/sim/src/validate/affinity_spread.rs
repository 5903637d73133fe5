//! `kind = "affinity_spread"` in an experiment's `[[check]]`: see [`AffinitySpread`].

use super::prelude::*;

/// Seed 001's words on Table 4's 8-port case: whether `flows` over `platform` with `cards`
/// (as `irq_table`) can be spread evenly over the CPUs by static IRQ affinity (the seed's
/// rules, `irqlab plan affinity`), with INTXSWZCTRL at reset and at the planned values.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AffinitySpread {
    pub id: String,
    pub platform: String,
    pub cards: Vec<String>,
    pub flows: Vec<String>,
    pub unswizzled_even: bool,
    pub swizzled_even: bool,
    pub published_text: String,
    pub source: String,
}

impl RowKind for AffinitySpread {
    fn id(&self) -> &str {
        &self.id
    }
    fn problem(&self) -> Option<&'static str> {
        if bad_cards(&self.cards) {
            return Some(BAD_CARDS);
        }
        self.flows
            .iter()
            .any(|f| f.parse::<crate::plan::affinity::Flow>().is_err())
            .then_some("an affinity_spread row's `flows` are NIC:NIC (\"eth2:eth4\")")
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
        let AffinitySpread {
            id,
            platform,
            cards,
            flows,
            unswizzled_even,
            swizzled_even,
            published_text,
            source,
        } = self;
        use crate::plan::affinity;
        let mut row = exp.row(id, "static IRQ affinity of NIC flows".into(), source);
        row.published_text = published_text.clone();
        row.tolerance = "exact".into();
        let word = |even: bool| if even { "even" } else { "not even" };
        row.published = format!(
            "none: {} | swizzled: {}",
            word(*unswizzled_even),
            word(*swizzled_even)
        );
        let flows: Vec<affinity::Flow> =
            flows.iter().filter_map(|f| f.parse().ok()).collect();
        let planned = exp
            .population(platform, cards)
            .and_then(|p| Ok((p.plan()?, p.cpus())))
            .map_err(|e| e.to_string())
            .and_then(|(swz, cpus)| {
                let plan = |t| {
                    affinity::plan(&affinity::irq_map(t), &flows, &cpus)
                        .map_err(|e| e.to_string())
                };
                Ok((plan(&swz.table_before)?, plan(&swz.table_after)?))
            });
        match planned {
            Err(e) => {
                row.simulated = "cannot be worked out".into();
                row.holds = Some(false);
                row.detail = e;
            }
            Ok((before, after)) => {
                let show = |p: &affinity::AffinityPlan| {
                    format!(
                        "{} (busiest CPU {} NICs, even {})",
                        word(p.is_even()),
                        p.busiest,
                        p.even
                    )
                };
                row.simulated =
                    format!("none: {} | swizzled: {}", show(&before), show(&after));
                row.holds = Some(
                    before.is_even() == *unswizzled_even
                        && after.is_even() == *swizzled_even,
                );
                let cpus = |p: &affinity::AffinityPlan| {
                    p.cpu_nics
                        .iter()
                        .map(|(c, n)| format!("cpu{c} {}", n.join(" ")))
                        .collect::<Vec<_>>()
                        .join("; ")
                };
                row.detail = format!(
                    "planned none: {} | swizzled: {}",
                    cpus(&before),
                    cpus(&after)
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
