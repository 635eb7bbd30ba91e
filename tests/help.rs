//! The command-line help: the top-level text says what the tool does, and every subcommand's
//! `--help` ends with an example of it (a newcomer's first use of a command is a copy of it).

use std::process::Command;

fn help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_gpumodel"))
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "gpumodel {args:?} failed");
    String::from_utf8(out.stdout).unwrap()
}

/// The subcommands the top-level help lists (all but `help` itself).
fn subcommands() -> Vec<String> {
    let top = help(&["--help"]);
    let mut cmds = Vec::new();
    let mut inside = false;
    for line in top.lines() {
        if line.starts_with("Commands:") {
            inside = true;
            continue;
        }
        if inside {
            // Entries are indented by two spaces; a wrapped description by more.
            let Some(rest) = line.strip_prefix("  ") else {
                break;
            };
            if rest.starts_with(' ') {
                continue;
            }
            let name = rest.split_whitespace().next().unwrap_or("");
            if !name.is_empty() && name != "help" {
                cmds.push(name.to_string());
            }
        }
    }
    cmds
}

#[test]
fn top_level_help_says_what_the_tool_does() {
    let top = help(&["--help"]);
    for word in [
        "NVBit",
        "Accel-Sim",
        "synthetic",
        "sharing one GPU",
        "MIG",
        "MPS",
        "green contexts",
        "STP",
        "ANTT",
        "fairness",
        "figures",
        "gpumodel policies",
        "Exit codes",
    ] {
        assert!(
            top.contains(word),
            "`gpumodel --help` does not mention {word}:\n{top}"
        );
    }
    assert!(top.lines().any(|l| l.starts_with("Examples:")), "{top}");
}

#[test]
fn every_subcommand_has_an_example() {
    let cmds = subcommands();
    assert!(cmds.len() >= 14, "too few subcommands found: {cmds:?}");
    for c in &cmds {
        let text = help(&[c, "--help"]);
        let lines: Vec<&str> = text.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.starts_with("Example"))
            .unwrap_or_else(|| panic!("`gpumodel {c} --help` has no Example line:\n{text}"));
        let example = lines.get(at + 1).copied().unwrap_or("");
        assert!(
            example.trim_start().starts_with(&format!("gpumodel {c}")),
            "`gpumodel {c} --help`: the line after `Example:` is not a `gpumodel {c}` command: \
             {example:?}"
        );
    }
}

#[test]
fn analyze_help_says_where_the_policies_are_listed() {
    let text = help(&["analyze", "--help"]);
    assert!(text.contains("`gpumodel policies`"), "{text}");
}
