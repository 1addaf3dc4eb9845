//! `docs/rules.md` (the target of every diagnostic's URL) is generated from the rules'
//! compiled-in docs and must stay in sync. Regenerate with
//! `MEMLINT_BLESS=1 cargo test -p memlint-lint --test rule_docs`.

use std::path::Path;

fn render() -> String {
    let mut out = String::from(
        "# memlint rules\n\n<!-- Generated from the rules' docs by `MEMLINT_BLESS=1 cargo test -p memlint-lint --test rule_docs`. -->\n\n",
    );
    out.push_str(
        "Rules in the **nursery** are off by default: turn them all on with `-W nursery` (or \
         `nursery = \"warn\"` in the configuration), or one by its id. A rule leaves the nursery when \
         its findings on the tuning half of the evaluation corpus reach 90 % precision with at least \
         one true finding; two core rules are on without such evidence (see [the evaluation](../eval/README.md#default-and-nursery-rules)).\n\n",
    );
    out.push_str("| rule | finds | default |\n|---|---|---|\n");
    for m in memlint_lint::rules::all_meta() {
        out.push_str(&format!("| [`{0}`](#{0}) | {1} | {2} |\n", m.id, m.summary, default(m)));
    }
    for m in memlint_lint::rules::all_meta() {
        out.push_str(&format!(
            "\n## {}\n\nCode `memlint::{}`. {}. Default: {}.\n\n",
            m.id,
            m.id,
            capitalize(m.summary),
            default(m)
        ));
        out.push_str(m.docs.trim_end());
        out.push('\n');
    }
    out
}

fn default(m: &memlint_lint::rule::RuleMeta) -> String {
    match m.group.name() {
        Some(group) => format!("off ({group}; {} when on)", m.default_level.as_str()),
        None => m.default_level.as_str().to_string(),
    }
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
}

#[test]
fn docs_rules_md_is_current() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/rules.md");
    let want = render();
    if std::env::var_os("MEMLINT_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(have == want, "docs/rules.md is stale: run `MEMLINT_BLESS=1 cargo test -p memlint-lint --test rule_docs`");
}
