//! Class-pattern matching (Punyala et al., seed 001 §III-B): which applications of a
//! waiting queue should share the GPU.
//!
//! With N_C classes and groups of N_G co-running applications there are
//! `C(N_C + N_G − 1, N_G)` patterns (eq. 1), each a vector of class counts summing to N_G
//! (eq. 2). A pattern's efficiency is `e_k = (1/N_G) Σ_{i≠j ∈ P_k} 1/S_{i→j}` over ordered
//! pairs of its members (eq. 3), with `S_{j→i}` the slowdown class i suffers beside class j.
//! The ILP (eq. 4–5, good_lp with the pure-Rust microlp solver) picks how many groups L_k
//! of each pattern to form so that the queue's class counts are used exactly and Σ e_k·L_k
//! is largest. When N_G does not divide the queue, the last group is smaller (its patterns
//! have the remainder's size; a lone application runs alone, efficiency 1). Brute force
//! (every integer solution of the same constraints) checks the ILP on small queues.

use good_lp::{constraint, microlp, variable, Expression, ProblemVariables, Solution, SolverModel};

use crate::error::{Error, Result};

/// `s[j][i]` = slowdown of class `i` when it runs beside class `j` (≥ 1 normally).
#[derive(Clone, Debug, PartialEq)]
pub struct Interference {
    pub classes: Vec<String>,
    pub s: Vec<Vec<f64>>,
}

impl Interference {
    fn check(&self) -> Result<()> {
        let n = self.classes.len();
        if n == 0 || self.s.len() != n || self.s.iter().any(|r| r.len() != n) {
            return Err(Error::Usage(format!(
                "the interference matrix must be {n}×{n} (one row and column per class)"
            )));
        }
        if let Some((j, i)) = (0..n)
            .flat_map(|j| (0..n).map(move |i| (j, i)))
            .find(|&(j, i)| !(self.s[j][i] > 0.0 && self.s[j][i].is_finite()))
        {
            return Err(Error::Usage(format!(
                "slowdown S({}→{}) = {} is not a positive number",
                self.classes[j], self.classes[i], self.s[j][i]
            )));
        }
        Ok(())
    }
}

/// Every vector of `nc` class counts summing to `size`, in lexicographic order (eq. 2).
pub fn patterns(nc: usize, size: usize) -> Vec<Vec<u32>> {
    fn rec(i: usize, left: u32, cur: &mut Vec<u32>, out: &mut Vec<Vec<u32>>) {
        if i + 1 == cur.len() {
            cur[i] = left;
            out.push(cur.clone());
            return;
        }
        for c in (0..=left).rev() {
            cur[i] = c;
            rec(i + 1, left - c, cur, out);
        }
    }
    let mut out = Vec::new();
    if nc > 0 {
        rec(0, size as u32, &mut vec![0; nc], &mut out);
    }
    out
}

/// Eq. 3 for a pattern of class counts (a single application: 1, it runs alone).
pub fn efficiency(p: &[u32], m: &Interference) -> f64 {
    let members: Vec<usize> = p
        .iter()
        .enumerate()
        .flat_map(|(c, &n)| std::iter::repeat_n(c, n as usize))
        .collect();
    let g = members.len();
    if g <= 1 {
        return 1.0;
    }
    let mut sum = 0.0;
    for (x, &i) in members.iter().enumerate() {
        for (y, &j) in members.iter().enumerate() {
            if x != y {
                sum += 1.0 / m.s[i][j];
            }
        }
    }
    sum / g as f64
}

/// A grouping of the queue: how many groups of each pattern.
#[derive(Clone, Debug, PartialEq)]
pub struct Grouping {
    /// `(pattern as class counts, number of groups)`, patterns with at least one group.
    pub groups: Vec<(Vec<u32>, u32)>,
    /// Σ e_k · L_k.
    pub objective: f64,
}

/// The candidate patterns of a queue: full groups, plus remainder-size ones if needed.
fn candidates(
    counts: &[u32],
    ng: usize,
    m: &Interference,
) -> Result<(Vec<Vec<u32>>, Vec<bool>, u32)> {
    m.check()?;
    if counts.len() != m.classes.len() {
        return Err(Error::Usage(format!(
            "the queue has counts for {} classes, the interference matrix {}",
            counts.len(),
            m.classes.len()
        )));
    }
    if ng == 0 {
        return Err(Error::Usage(
            "a group needs at least one application".into(),
        ));
    }
    let nq: u32 = counts.iter().sum();
    if nq == 0 {
        return Err(Error::Usage("the queue is empty".into()));
    }
    let full = nq / ng as u32;
    let rem = nq as usize % ng;
    let mut pats = patterns(counts.len(), ng);
    let mut is_rem = vec![false; pats.len()];
    if rem > 0 {
        let r = patterns(counts.len(), rem);
        is_rem.extend(std::iter::repeat_n(true, r.len()));
        pats.extend(r);
    }
    Ok((pats, is_rem, full))
}

/// Eq. 5 solved as an ILP.
pub fn solve(counts: &[u32], ng: usize, m: &Interference) -> Result<Grouping> {
    let (pats, is_rem, full) = candidates(counts, ng, m)?;
    let e: Vec<f64> = pats.iter().map(|p| efficiency(p, m)).collect();
    let mut vars = ProblemVariables::new();
    let l: Vec<_> = pats
        .iter()
        .map(|_| vars.add(variable().integer().min(0.0)))
        .collect();
    let obj: Expression = l.iter().zip(&e).map(|(&v, &ek)| ek * v).sum();
    let mut model = vars.maximise(obj).using(microlp);
    let n_full: Expression = l
        .iter()
        .zip(&is_rem)
        .filter(|(_, r)| !**r)
        .map(|(&v, _)| v)
        .sum();
    model = model.with(constraint!(n_full == full as f64));
    if is_rem.iter().any(|&r| r) {
        let n_rem: Expression = l
            .iter()
            .zip(&is_rem)
            .filter(|(_, r)| **r)
            .map(|(&v, _)| v)
            .sum();
        model = model.with(constraint!(n_rem == 1.0));
    }
    for (c, &want) in counts.iter().enumerate() {
        let used: Expression = l.iter().zip(&pats).map(|(&v, p)| p[c] as f64 * v).sum();
        model = model.with(constraint!(used == want as f64));
    }
    let sol = model
        .solve()
        .map_err(|err| Error::Usage(format!("no grouping of the queue exists: {err}")))?;
    let groups: Vec<(Vec<u32>, u32)> = pats
        .iter()
        .zip(&l)
        .map(|(p, &v)| (p.clone(), sol.value(v).round() as u32))
        .filter(|(_, n)| *n > 0)
        .collect();
    let objective = groups
        .iter()
        .map(|(p, n)| efficiency(p, m) * *n as f64)
        .sum();
    Ok(Grouping { groups, objective })
}

/// Every integer solution of eq. 5's constraints, best objective (for checking `solve`).
pub fn brute_force(counts: &[u32], ng: usize, m: &Interference) -> Result<Grouping> {
    let (pats, is_rem, full) = candidates(counts, ng, m)?;
    let e: Vec<f64> = pats.iter().map(|p| efficiency(p, m)).collect();
    let need_rem = u32::from(is_rem.iter().any(|&r| r));
    let mut best: Option<(f64, Vec<u32>)> = None;
    let mut take = vec![0u32; pats.len()];
    #[allow(clippy::too_many_arguments)]
    fn rec(
        k: usize,
        left: &mut Vec<u32>,
        groups_left: (u32, u32),
        take: &mut Vec<u32>,
        pats: &[Vec<u32>],
        is_rem: &[bool],
        e: &[f64],
        best: &mut Option<(f64, Vec<u32>)>,
    ) {
        if k == pats.len() {
            if groups_left == (0, 0) && left.iter().all(|&x| x == 0) {
                let f: f64 = take.iter().zip(e).map(|(&n, &ek)| n as f64 * ek).sum();
                if best.as_ref().is_none_or(|b| f > b.0 + 1e-12) {
                    *best = Some((f, take.clone()));
                }
            }
            return;
        }
        let budget = if is_rem[k] {
            groups_left.1
        } else {
            groups_left.0
        };
        let mut n = 0;
        loop {
            take[k] = n;
            let gl = if is_rem[k] {
                (groups_left.0, budget - n)
            } else {
                (budget - n, groups_left.1)
            };
            rec(k + 1, left, gl, take, pats, is_rem, e, best);
            if n == budget || !pats[k].iter().zip(left.iter()).all(|(p, l)| p <= l) {
                break;
            }
            for (l, p) in left.iter_mut().zip(&pats[k]) {
                *l -= p;
            }
            n += 1;
        }
        // Give back what the loop took.
        for (l, p) in left.iter_mut().zip(&pats[k]) {
            *l += p * n;
        }
        take[k] = 0;
    }
    let mut left = counts.to_vec();
    rec(
        0,
        &mut left,
        (full, need_rem),
        &mut take,
        &pats,
        &is_rem,
        &e,
        &mut best,
    );
    let (objective, take) =
        best.ok_or_else(|| Error::Usage("no grouping of the queue exists".into()))?;
    Ok(Grouping {
        groups: pats
            .iter()
            .zip(take)
            .filter(|(_, n)| *n > 0)
            .map(|(p, n)| (p.clone(), n))
            .collect(),
        objective,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_count_is_eq_1() {
        // C(N_C + N_G − 1, N_G): 4 classes, pairs 10, triples 20.
        assert_eq!(patterns(4, 2).len(), 10);
        assert_eq!(patterns(4, 3).len(), 20);
        assert!(patterns(4, 3).iter().all(|p| p.iter().sum::<u32>() == 3));
    }

    #[test]
    fn efficiency_of_a_pair_is_its_mean_progress() {
        let m = Interference {
            classes: vec!["M".into(), "A".into()],
            s: vec![vec![2.0, 1.25], vec![1.5, 1.1]],
        };
        // M beside A: M slows by S(A→M) = 1.5, A by S(M→A) = 1.25.
        let e = efficiency(&[1, 1], &m);
        assert!((e - (1.0 / 1.5 + 1.0 / 1.25) / 2.0).abs() < 1e-12);
        assert_eq!(efficiency(&[0, 1], &m), 1.0);
    }
}
