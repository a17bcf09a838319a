use super::*;

/// The presets as the code sets them, as the Markdown table of
/// `docs/policies.md` (a test keeps the chapter's copy the same): each
/// preset applied to the default policy, with its attempts, the budget
/// model it builds (with its numbers), whether it reads claims, and the
/// headers of the don't-retry signal it reads.
fn preset_table() -> String {
    let mut s = String::from(
        "| preset | attempts | retries on (`retry_on`) | budget model | ownership | don't-retry signal (headers read) |\n|---|---|---|---|---|---|\n",
    );
    for preset in Preset::every() {
        let mut p = Policy::default();
        p.apply_preset(preset);
        let attempts = match (p.mode.retries, p.mode.attempts) {
            (false, _) => "1".into(),
            (true, None) => format!("R = {}", p.attempts),
            (true, Some(r)) => r.to_string(),
        };
        let on = p.mode.retry_on;
        let retry_on = if (500..600).all(|c| on.statuses().any(|s| s == c))
            && on.conditions().next().is_none()
        {
            "statuses 500-599".to_string()
        } else {
            on.describe()
        };
        let backoff = p
            .mode
            .backoff
            .map(|b| format!("; backoff {} ms", b.as_millis()))
            .unwrap_or_default();
        let mut model = p
            .budget_model()
            .map_or_else(|| "–".into(), |m| format!("`{}`", m.describe()));
        if p.mode.throttle {
            let t = p.throttle_config;
            model += &format!(" + throttle K = {} over {} s", t.k, t.window.as_secs());
        }
        if preset == Preset::Sre {
            model += &format!(", R ≤ {SRE_MAX_ATTEMPTS}");
        }
        let signal = p.mode.signal.map_or_else(
            || "–".into(),
            |sig| {
                let headers: Vec<String> = sig.headers().iter().map(|h| format!("`{h}`")).collect();
                format!("`{}`: {}", sig.name(), headers.join(", "))
            },
        );
        s.push_str(&format!(
            "| `{}` | {attempts} | {retry_on}{backoff} | {model} | {} | {signal} |\n",
            preset.name(),
            if p.mode.ownership { "on" } else { "off" },
        ));
    }
    s
}

#[test]
fn docs_give_each_preset_as_the_code_sets_it() {
    crate::docs::check_block("docs/policies.md", "presets", &preset_table());
}

#[test]
fn every_preset_is_recognised_after_it_is_applied() {
    for preset in Preset::every() {
        let mut p = Policy::default();
        p.apply_preset(preset);
        assert_eq!(p.preset(), Some(preset), "{}", preset.name());
        assert_eq!(Preset::parse(preset.name()), Some(preset));
    }
}

#[test]
fn a_preset_keeps_r_and_b() {
    let mut p = Policy {
        attempts: 3,
        budget: Some(0.3),
        ..Policy::default()
    };
    p.apply_preset(Preset::Finagle);
    p.apply_preset(Preset::Budget);
    assert_eq!((p.attempts, p.budget), (3, Some(0.3)));
    assert_eq!(
        p.for_edge(&PolicyFields::default()).budget,
        Some(BudgetModel::Window {
            ratio: 0.3,
            min_per_sec: 0.0,
            ttl: Duration::from_secs(10)
        })
    );
}

#[test]
fn the_industry_presets_bring_their_sources_numbers() {
    let edge = |preset| {
        let mut p = Policy::default();
        p.apply_preset(preset);
        p.for_edge(&PolicyFields::default())
    };
    assert_eq!(edge(Preset::Finagle).budget, Some(BudgetModel::FINAGLE));
    assert_eq!(edge(Preset::Envoy).budget, Some(BudgetModel::ENVOY));
    assert_eq!(edge(Preset::Grpc).budget, Some(BudgetModel::GRPC));
    assert_eq!(edge(Preset::Aws).budget, Some(BudgetModel::AWS));
    assert_eq!(edge(Preset::Aws2026).budget, Some(BudgetModel::AWS_2026));
    assert_eq!(edge(Preset::Envoy).signal, Some(Signal::Overloaded));
    assert!(!edge(Preset::Grpc).ownership);
}

#[test]
fn fields_mix_a_model_and_a_signal() {
    let mut p = Policy::default();
    p.apply_fields(&PolicyFields {
        budget_model: Some(BudgetKind::Tokens),
        signal: Some(SignalSetting::On(Signal::Ownership)),
        max_tokens: Some(20),
        ..PolicyFields::default()
    });
    assert_eq!(p.mode_name(), "retry+tokens+ownership");
    assert_eq!(
        p.for_edge(&PolicyFields::default()).budget,
        Some(BudgetModel::Tokens {
            max: 20,
            ratio: 0.1
        })
    );
}
