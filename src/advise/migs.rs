//! MIG configurations for `advise`: every layout of the model's profile table that places
//! (the table's own rules, [`Table::place`]) with every assignment of the applications to
//! its instances, each instance holding at least one application (an empty instance
//! changes nothing for the others: they are isolated). Assignments that differ only by
//! swapping instances of one profile are one configuration. A configuration is dominated
//! when another one groups the applications the same way and gives every group at least as
//! many SMs and memory slices, one of them more; the single instance holding every
//! application on the whole GPU is MPS at its defaults and is not run again.

use std::collections::{BTreeMap, BTreeSet};

use super::candidate::{Candidate, Share, Skip};
use crate::arch::GpuSpec;
use crate::error::Result;
use crate::policy::mig::{resources, Table};
use crate::policy::PolicySpec;

/// One MIG configuration: profile index per group, and the groups (application indices).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Config {
    /// (profile index, applications), sorted.
    parts: Vec<(usize, Vec<usize>)>,
}

/// Set partitions of `0..n` into non-empty groups (each group sorted, groups by first).
fn set_partitions(n: usize) -> Vec<Vec<Vec<usize>>> {
    let mut out = Vec::new();
    let mut cur: Vec<Vec<usize>> = Vec::new();
    fn go(i: usize, n: usize, cur: &mut Vec<Vec<usize>>, out: &mut Vec<Vec<Vec<usize>>>) {
        if i == n {
            out.push(cur.clone());
            return;
        }
        for g in 0..cur.len() {
            cur[g].push(i);
            go(i + 1, n, cur, out);
            cur[g].pop();
        }
        cur.push(vec![i]);
        go(i + 1, n, cur, out);
        cur.pop();
    }
    go(0, n, &mut cur, &mut out);
    out
}

/// Multisets of `k` profile indices out of `p` (non-decreasing).
fn multisets(p: usize, k: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    let mut cur = Vec::new();
    fn go(from: usize, p: usize, k: usize, cur: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        if cur.len() == k {
            out.push(cur.clone());
            return;
        }
        for i in from..p {
            cur.push(i);
            go(i, p, k, cur, out);
            cur.pop();
        }
    }
    go(0, p, k, &mut cur, &mut out);
    out
}

/// Distinct orderings of a multiset.
fn permutations(v: &[usize]) -> BTreeSet<Vec<usize>> {
    if v.len() <= 1 {
        return std::iter::once(v.to_vec()).collect();
    }
    let mut out = BTreeSet::new();
    for i in 0..v.len() {
        let mut rest = v.to_vec();
        let x = rest.remove(i);
        for mut p in permutations(&rest) {
            p.insert(0, x);
            out.insert(p);
        }
    }
    out
}

/// The MIG candidates for applications `names` on `spec`, the number of feasible
/// configurations, and what was pruned.
pub fn mig_configs(spec: &GpuSpec, names: &[String]) -> Result<(Vec<Candidate>, usize, Vec<Skip>)> {
    let n = names.len();
    let tables: Vec<Table> = Table::names()
        .into_iter()
        .map(Table::builtin)
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .filter(|t| t.gpu == spec.name && t.fits(spec).is_ok())
        .collect();
    let Some(table) = tables.into_iter().next() else {
        let skip = Skip {
            mechanism: "mig".into(),
            count: 0,
            reason: format!(
                "no MIG table for model {} (MIG runs on a100 and h100)",
                spec.name
            ),
            examples: Vec::new(),
        };
        return Ok((Vec::new(), 0, vec![skip]));
    };
    let np = table.profile.len();
    let mut configs: BTreeSet<Config> = BTreeSet::new();
    for k in 1..=n.min(table.compute_slices as usize) {
        for ms in multisets(np, k) {
            let layout: Vec<&str> = ms.iter().map(|&i| table.profile[i].name.as_str()).collect();
            if table.place(&layout.join(",")).is_err() {
                continue;
            }
            for groups in set_partitions(n).into_iter().filter(|g| g.len() == k) {
                for perm in permutations(&ms) {
                    let mut parts: Vec<(usize, Vec<usize>)> =
                        perm.into_iter().zip(groups.iter().cloned()).collect();
                    parts.sort();
                    configs.insert(Config { parts });
                }
            }
        }
    }
    let feasible = configs.len();
    let (kept, dominated, whole) = prune(&table, spec, configs);
    let mut skips = Vec::new();
    let label = |c: &Config| label(&table, c, names);
    if !dominated.is_empty() {
        skips.push(Skip {
            mechanism: "mig".into(),
            count: dominated.len(),
            reason: "dominated: another layout groups the applications the same way and gives every group at least as many SMs and memory slices (instances are isolated)".into(),
            examples: dominated.iter().take(4).map(|c| format!("mig {}", label(c))).collect(),
        });
    }
    if !whole.is_empty() {
        skips.push(Skip {
            mechanism: "mig".into(),
            count: whole.len(),
            reason: "one instance of the whole GPU holding every application: MPS at its defaults"
                .into(),
            examples: whole.iter().map(|c| format!("mig {}", label(c))).collect(),
        });
    }
    let cands = kept
        .iter()
        .map(|c| candidate(&table, spec, c, n, label(c)))
        .collect::<Result<Vec<_>>>()?;
    Ok((cands, feasible, skips))
}

/// (SMs, memory slices) of each group of applications.
type GroupRes = BTreeMap<Vec<usize>, (u32, u32)>;

/// (kept, dominated, whole-GPU single instance).
fn prune(
    table: &Table,
    spec: &GpuSpec,
    configs: BTreeSet<Config>,
) -> (Vec<Config>, Vec<Config>, Vec<Config>) {
    let res = |c: &Config| -> GroupRes {
        c.parts
            .iter()
            .map(|(p, g)| (g.clone(), (table.profile[*p].sms, table.profile[*p].memory)))
            .collect()
    };
    let all: Vec<(Config, GroupRes)> = configs
        .into_iter()
        .map(|c| {
            let r = res(&c);
            (c, r)
        })
        .collect();
    let (mut kept, mut dominated, mut whole) = (Vec::new(), Vec::new(), Vec::new());
    for (c, r) in &all {
        let beaten = all.iter().any(|(d, s)| {
            d != c
                && s.keys().eq(r.keys())
                && r.iter().all(|(g, a)| s[g].0 >= a.0 && s[g].1 >= a.1)
                && r.iter().any(|(g, a)| s[g] != *a)
        });
        if beaten {
            dominated.push(c.clone());
        } else if c.parts.len() == 1 && table.profile[c.parts[0].0].sms == spec.sm.count {
            whole.push(c.clone());
        } else {
            kept.push(c.clone());
        }
    }
    (kept, dominated, whole)
}

/// `4g.40gb[a]+3g.40gb[b,c]`.
fn label(table: &Table, c: &Config, names: &[String]) -> String {
    c.parts
        .iter()
        .map(|(p, g)| {
            let who: Vec<&str> = g.iter().map(|&a| names[a].as_str()).collect();
            format!("{}[{}]", table.profile[*p].name, who.join(","))
        })
        .collect::<Vec<_>>()
        .join("+")
}

fn candidate(
    table: &Table,
    spec: &GpuSpec,
    c: &Config,
    n: usize,
    label: String,
) -> Result<Candidate> {
    let layout: Vec<&str> = c
        .parts
        .iter()
        .map(|(p, _)| table.profile[*p].name.as_str())
        .collect();
    let mut assign = vec![0u32; n];
    for (i, (_, g)) in c.parts.iter().enumerate() {
        for &a in g {
            assign[a] = i as u32;
        }
    }
    let mut t = toml::Table::new();
    t.insert("layout".into(), toml::Value::String(layout.join(",")));
    t.insert("table".into(), toml::Value::String(table.name.clone()));
    t.insert(
        "assign".into(),
        toml::Value::Array(
            assign
                .iter()
                .map(|&x| toml::Value::Integer(x as i64))
                .collect(),
        ),
    );
    let policy = PolicySpec::parse("mig", &t)?;
    let inst = table
        .place(&layout.join(","))
        .map_err(|e| crate::error::Error::Usage(format!("mig {label}: {e}")))?;
    let res = resources(table, &inst);
    let nsm = spec.sm.count as usize;
    let sms: Vec<Option<Vec<bool>>> = assign
        .iter()
        .map(|&i| Some(res[i as usize].0.clone()))
        .collect();
    let ch: Vec<Option<Vec<u32>>> = assign
        .iter()
        .map(|&i| Some(res[i as usize].1.clone()))
        .collect();
    debug_assert!(sms
        .iter()
        .all(|m| m.as_ref().is_some_and(|m| m.len() == nsm)));
    Ok(Candidate {
        mechanism: "mig".into(),
        label,
        policy,
        share: Share::of(spec, &sms, &ch, false, false),
        aliases: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_and_h100_layouts() {
        assert_eq!(set_partitions(3).len(), 5);
        assert_eq!(set_partitions(4).len(), 15);
        let spec = GpuSpec::builtin("h100").unwrap();
        let names: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let (c, feasible, skips) = mig_configs(&spec, &names).unwrap();
        assert!(feasible > c.len(), "{feasible} feasible, {} kept", c.len());
        assert!(skips.iter().any(|s| s.reason.starts_with("dominated")));
        // Every kept layout places and isolates the instances' channels.
        for x in &c {
            let groups = x.label.matches('[').count();
            if groups == 3 {
                assert!(
                    x.share.channel_sharers.iter().all(Vec::is_empty),
                    "{}",
                    x.label
                );
            }
        }
    }
}
