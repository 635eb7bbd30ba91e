//! An internal fault (a broken invariant of the engine or a controller) is a bug: exit code 1
//! with a message that says so and what to report. Bad input stays exit code 2.

mod common;

use common::engine_kit::{app, completion, ctl, stream, tiny, BUF};
use gpumodel::engine::{Action, Handover, Hook};
use gpumodel::error::Error;

/// A controller that, at its first epoch, gives application 0 an SM mask for more SMs
/// than the GPU has: an action the engine cannot carry out.
fn run_with_impossible_action() -> Error {
    let spec = tiny(2, 2);
    let apps = [app("victim", vec![stream("s", 8, 2, 64, BUF)])];
    let mut fired = false;
    let mut c = ctl(Some(50), |h, _v, acts| {
        if h == Hook::Epoch && !fired {
            fired = true;
            acts.push(Action::SetSms {
                app: 0,
                sms: vec![true; 7],
                handover: Handover::Drain,
            });
        }
    });
    match gpumodel::engine::run(&spec, &apps, &completion(1), &mut c) {
        Ok(_) => panic!("the engine carried out an SM mask for 7 SMs on a 2-SM GPU"),
        Err(e) => e,
    }
}

#[test]
fn an_impossible_controller_action_is_an_internal_error() {
    let e = run_with_impossible_action();
    assert!(matches!(e, Error::Internal(_)), "{e:?}");
    assert!(!e.is_bad_input());
    let msg = e.to_string();
    for want in [
        "internal error",
        "7 entries for 2 SMs",
        "victim",
        "bug",
        "report",
    ] {
        assert!(msg.contains(want), "message lacks {want:?}: {msg}");
    }
    // The CLI's mapping: exit code 1, and context added on the way keeps the kind.
    let any = anyhow::Error::from(e.context("workload w, policy p"));
    assert_eq!(gpumodel::cli::exit_code(&any), 1);
    assert!(format!("{any:#}").contains("workload w, policy p"));
}

#[test]
fn a_wrong_application_index_is_an_internal_error() {
    let spec = tiny(2, 2);
    let apps = [app("a", vec![stream("s", 8, 2, 64, BUF)])];
    let mut c = ctl(Some(50), |h, _v, acts| {
        if h == Hook::Epoch {
            acts.push(Action::SetFraction {
                app: 3,
                fraction: Some(0.5),
            });
        }
    });
    let e = gpumodel::engine::run(&spec, &apps, &completion(1), &mut c).unwrap_err();
    assert!(matches!(e, Error::Internal(_)), "{e:?}");
    assert_eq!(gpumodel::cli::exit_code(&e.into()), 1);
}

#[test]
fn bad_input_stays_exit_code_2() {
    let d = tempfile::tempdir().unwrap();
    let bad = d.path().join("app.toml");
    std::fs::write(&bad, "this is = not [ a spec").unwrap();
    let (code, _out, err) = common::cli(&["run", bad.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("app.toml"), "{err}");
    assert!(!err.contains("bug"), "{err}");
    let missing = d.path().join("missing.gmt");
    let (code, _out, err) = common::cli(&["inspect", missing.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    // Usage errors map to 2 as well.
    let usage = anyhow::Error::from(Error::Usage("no such policy".into()));
    assert_eq!(gpumodel::cli::exit_code(&usage), 2);
}
