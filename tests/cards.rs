//! Workload cards (`gpumodel card`, `traces/<paper>/card.toml`): a row outside its tolerance
//! fails the command and is named; a malformed card is bad input naming the file and line;
//! and the committed cards hold on today's engine and specs, each row doing what its card
//! expects (pass, or a documented `expect = "fail"`), so a benchmark that moves in either
//! direction fails this test.

mod common;

use std::path::{Path, PathBuf};

use common::cli;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// A temporary suite folder holding SiM's LM spec (6 CTAs/SM on k40c, ISU ~0.4) and a card.
fn suite(card: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        root().join("traces/sim/lm.toml"),
        dir.path().join("lm.toml"),
    )
    .unwrap();
    let path = dir.path().join("card.toml");
    std::fs::write(&path, card).unwrap();
    (dir, path)
}

const HEAD: &str = "paper = \"SiM\"\nseed = \"002_e998cf813a2d3de5.txt\"\ngpu = \"k40c\"\n\
                    tolerances = \"test\"\n";

fn row(what: &str, paper: &str, tol: &str, extra: &str) -> String {
    format!(
        "\n[[row]]\nbench = \"lm\"\nwhat = \"{what}\"\npaper = {paper}\nsource = \"Table 3\"\n\
         line = 653\ntolerance = {tol}\n{extra}"
    )
}

/// Line (1-based) of the `n`-th `[[row]]` in a card text.
fn row_line(text: &str, n: usize) -> usize {
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.trim() == "[[row]]")
        .nth(n)
        .unwrap()
        .0
        + 1
}

#[test]
fn wrong_paper_value_fails_and_is_named() {
    // Right: LM fits 6 CTAs/SM on the K40c. Wrong: 7.
    let text = format!(
        "{HEAD}{}{}",
        row("ctas_per_sm", "6", "\"exact\"", ""),
        row("ctas_per_sm", "7", "\"exact\"", "")
    );
    let (dir, card) = suite(&text);
    let json = dir.path().join("out.json");
    let (code, out, err) = cli(&[
        "card",
        card.to_str().unwrap(),
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{out}\n{err}");
    let line = row_line(&text, 1);
    assert!(
        err.contains(&format!("lm ctas_per_sm (card line {line})")),
        "{err}"
    );
    assert!(out.contains("FAIL") && out.contains("pass"), "{out}");
    // The JSON is written for a failing card too, with the effective model and every row.
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["model"], "k40c");
    assert_eq!(v["rows"].as_array().unwrap().len(), 2);
    assert_eq!(v["rows"][0]["pass"], true);
    assert_eq!(v["rows"][1]["pass"], false);
    assert_eq!(v["rows"][1]["engine"], 6.0);
}

#[test]
fn wrong_spec_fails_the_right_card() {
    // The card is right for the bundled spec; a spec with twice the shared memory per block
    // (14416 B: 3 CTAs/SM) is not.
    let text = format!("{HEAD}{}", row("ctas_per_sm", "6", "\"exact\"", ""));
    let (dir, card) = suite(&text);
    let (code, _, err) = cli(&["card", card.to_str().unwrap(), "-q"]);
    assert_eq!(code, 0, "{err}");
    let spec = dir.path().join("lm.toml");
    let s = std::fs::read_to_string(&spec).unwrap();
    assert!(s.contains("smem           = 7208"));
    std::fs::write(
        &spec,
        s.replace("smem           = 7208", "smem           = 14416"),
    )
    .unwrap();
    let (code, out, err) = cli(&["card", card.to_str().unwrap(), "-q"]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(err.contains("lm ctas_per_sm"), "{err}");
}

#[test]
fn known_failure_is_expected_and_a_fixed_one_is_noticed() {
    let why = "why = \"measured 6\"\n";
    let known = format!(
        "{HEAD}{}",
        row(
            "ctas_per_sm",
            "7",
            "\"exact\"",
            &format!("expect = \"fail\"\n{why}")
        )
    );
    let (_d, card) = suite(&known);
    let (code, out, err) = cli(&["card", card.to_str().unwrap(), "-q"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("fail (known)"), "{out}");
    // --strict counts it.
    let (code, _, _) = cli(&["card", card.to_str().unwrap(), "-q", "--strict"]);
    assert_eq!(code, 1);
    // A row marked as failing that passes is a change too.
    let fixed = format!(
        "{HEAD}{}",
        row(
            "ctas_per_sm",
            "6",
            "\"exact\"",
            &format!("expect = \"fail\"\n{why}")
        )
    );
    let (_d2, card) = suite(&fixed);
    let (code, out, err) = cli(&["card", card.to_str().unwrap(), "-q"]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(out.contains("PASS (expected fail)"), "{out}");
}

#[test]
fn malformed_cards_are_bad_input_with_file_and_line() {
    let cases = [
        // unknown characteristic
        (row("ipc_alone", "1.0", "{ rel = 0.1 }", ""), "ipc_alone"),
        // a label with a numeric tolerance
        (
            row("isu_class", "\"high-isu\"", "{ rel = 0.1 }", ""),
            "exact",
        ),
        // expect = fail without a reason
        (
            row("isu_alone", "0.5", "{ abs = 0.1 }", "expect = \"fail\"\n"),
            "why",
        ),
        // a number where a label is needed
        (row("isu_class", "0.5", "\"exact\"", ""), "label"),
        // TOML syntax error
        (row("isu_alone", "0.5 0.6", "{ abs = 0.1 }", ""), ""),
    ];
    for (r, word) in cases {
        let text = format!("{HEAD}\n# filler\n{r}");
        let (_d, card) = suite(&text);
        let (code, out, err) = cli(&["card", card.to_str().unwrap(), "-q"]);
        assert_eq!(code, 2, "{text}\n{out}\n{err}");
        assert!(err.contains(&format!("{}:", card.display())), "{err}");
        let first = row_line(&text, 0);
        let cited: usize = err
            .split(&format!("{}:", card.display()))
            .nth(1)
            .and_then(|s| s.split(':').next())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or_else(|| panic!("no line in {err}"));
        assert!(
            (first..=first + 8).contains(&cited),
            "line {cited} not in the row at {first}: {err}"
        );
        assert!(err.contains(word), "{err}");
    }
    // A missing spec names its path.
    let text = format!(
        "{HEAD}{}",
        row(
            "isu_alone",
            "0.5",
            "{ abs = 0.1 }",
            "spec = \"nope.toml\"\n"
        )
    );
    let (_d, card) = suite(&text);
    let (code, _, err) = cli(&["card", card.to_str().unwrap(), "-q"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("nope.toml") && err.contains(&format!("{}:", card.display())),
        "{err}"
    );
}

/// Runs a committed card (`traces/<suite>/card.toml`) in full on its paper's GPU: every row
/// must do what the card says (pass, or fail with its `expect = "fail"` reason), and the
/// JSON must name the paper's model. About 1-25 s each on two cores (the UGPU card, the
/// largest, ~25 s), so CI runs all five unreduced.
fn real_card(suite: &str, model: &str) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("card.json");
    let md = dir.path().join("CARD.md");
    let rel = format!("traces/{suite}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gpumodel"))
        .current_dir(root())
        .args(["card", &rel, "-q", "--json", json.to_str().unwrap()])
        .args(["--markdown", md.to_str().unwrap()])
        .output()
        .unwrap();
    let (o, e) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{suite} card changed:\n{o}\n{e}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["model"], model);
    let rows = v["rows"].as_array().unwrap();
    assert!(!rows.is_empty());
    assert!(rows.iter().all(|r| r["as_expected"] == true), "{o}");
    // The committed CARD.md is the one this measurement generates.
    let committed = std::fs::read_to_string(root().join(&rel).join("CARD.md")).unwrap();
    assert_eq!(
        std::fs::read_to_string(&md).unwrap(),
        committed,
        "{rel}/CARD.md is stale: regenerate it with `gpumodel card {rel} --markdown {rel}/CARD.md`"
    );
}

#[test]
fn warped_slicer_card_holds() {
    real_card("warped-slicer", "fermi-ws");
}

#[test]
fn sim_card_holds() {
    real_card("sim", "k40c");
}

#[test]
fn slate_card_holds() {
    real_card("slate", "titanxp");
}

#[test]
fn ugpu_card_holds() {
    real_card("ugpu", "ugpu-80sm-hbm");
}

#[test]
fn punyala_card_holds() {
    real_card("punyala", "gpgpusim-60sm");
}
