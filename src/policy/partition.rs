//! Intra-SM CTA partitioning as max-min: choose CTAs per SM `T_i` for each of K kernels so
//! that the smallest normalised performance `P_i(T_i)` is as large as possible while the
//! CTAs fit in one SM (Warped-Slicer eq. 1). Three solvers: the water-filling Algorithm 1
//! (O(K·N)), an exact ILP (good_lp, pure-Rust microlp solver) and brute force over every
//! combination (O(N^K), for checking and for the oracle's candidate list).

use good_lp::{constraint, microlp, variable, Expression, ProblemVariables, Solution, SolverModel};

use crate::error::{Error, Result};

/// Resources of one SM a CTA holds: threads, warps, registers, shared memory, CTA slots.
pub type Need = [u64; 5];

/// A partition problem: per kernel, performance with j = 1..=N CTAs (`perf[i][j-1]`) and
/// the resources one CTA needs; the SM's capacity.
#[derive(Clone, Debug, PartialEq)]
pub struct Problem {
    pub perf: Vec<Vec<f64>>,
    pub need: Vec<Need>,
    pub cap: Need,
}

/// A partition and the performance it gives.
#[derive(Clone, Debug, PartialEq)]
pub struct Partition {
    /// CTAs per SM per kernel.
    pub ctas: Vec<u32>,
    /// Normalised performance of each kernel (`P / max P`).
    pub perf: Vec<f64>,
}

impl Partition {
    /// The smallest normalised performance: the max-min objective.
    pub fn min_perf(&self) -> f64 {
        self.perf.iter().copied().fold(f64::INFINITY, f64::min)
    }
}

impl Problem {
    fn check(&self) -> Result<()> {
        if self.perf.is_empty() || self.perf.len() != self.need.len() {
            return Err(Error::Usage(format!(
                "a partition needs one performance curve and one CTA footprint per kernel ({} curves, {} footprints)",
                self.perf.len(),
                self.need.len()
            )));
        }
        if let Some(i) = self.perf.iter().position(|c| c.is_empty()) {
            return Err(Error::Usage(format!(
                "kernel {i} has an empty performance curve"
            )));
        }
        if !self.fits(&vec![1; self.perf.len()]) {
            return Err(Error::Usage(
                "one CTA of every kernel does not fit in one SM: no intra-SM partition exists"
                    .into(),
            ));
        }
        Ok(())
    }

    /// Performance normalised to each kernel's best point.
    pub fn normalised(&self) -> Vec<Vec<f64>> {
        self.perf
            .iter()
            .map(|c| {
                let m = c.iter().copied().fold(0.0, f64::max);
                c.iter()
                    .map(|&p| if m > 0.0 { p / m } else { 0.0 })
                    .collect()
            })
            .collect()
    }

    /// Whether `ctas` fit in one SM.
    pub fn fits(&self, ctas: &[u32]) -> bool {
        (0..5).all(|r| {
            ctas.iter()
                .zip(&self.need)
                .map(|(&t, n)| t as u64 * n[r])
                .sum::<u64>()
                <= self.cap[r]
        })
    }

    fn partition(&self, ctas: Vec<u32>) -> Partition {
        let p = self.normalised();
        let perf = ctas
            .iter()
            .enumerate()
            .map(|(i, &t)| p[i][t as usize - 1])
            .collect();
        Partition { ctas, perf }
    }

    /// Every feasible combination with at least one CTA per kernel, in lexicographic order.
    pub fn combinations(&self) -> Vec<Vec<u32>> {
        let k = self.perf.len();
        let mut out = Vec::new();
        let mut t = vec![1u32; k];
        loop {
            if self.fits(&t) {
                out.push(t.clone());
            }
            // Odometer over 1..=N_i.
            let mut i = k;
            loop {
                if i == 0 {
                    return out;
                }
                i -= 1;
                if (t[i] as usize) < self.perf[i].len() {
                    t[i] += 1;
                    for x in &mut t[i + 1..] {
                        *x = 1;
                    }
                    break;
                }
            }
        }
    }
}

/// Warped-Slicer Algorithm 1 (water filling). Each kernel starts with the fewest CTAs that
/// reach its first performance level; then, repeatedly, the kernel with the lowest level
/// gets the fewest extra CTAs that raise it, until that kernel cannot grow (Full) for
/// every kernel. O(K·N) time and space.
pub fn water_fill(pb: &Problem) -> Result<Partition> {
    pb.check()?;
    let p = pb.normalised();
    let k = p.len();
    // Q_i: strictly increasing record performances; M_i: the CTA counts reaching them.
    let mut q: Vec<Vec<f64>> = Vec::with_capacity(k);
    let mut m: Vec<Vec<u32>> = Vec::with_capacity(k);
    for c in &p {
        let (mut qi, mut mi, mut best) = (Vec::new(), Vec::new(), 0.0);
        for (j, &v) in c.iter().enumerate() {
            if v > best || qi.is_empty() {
                best = v;
                qi.push(v);
                mi.push(j as u32 + 1);
            }
        }
        q.push(qi);
        m.push(mi);
    }
    // The first record of every curve is its first point: one CTA each (feasible, checked).
    let mut t: Vec<u32> = m.iter().map(|mi| mi[0]).collect();
    let mut g = vec![0usize; k];
    let mut full: Vec<bool> = (0..k).map(|i| m[i].len() == 1).collect();
    loop {
        let mut sel = None;
        let mut mp = f64::INFINITY;
        for i in 0..k {
            if !full[i] && q[i][g[i]] < mp {
                mp = q[i][g[i]];
                sel = Some(i);
            }
        }
        let Some(s) = sel else { break };
        let dt = m[s][g[s] + 1] - m[s][g[s]];
        let mut next = t.clone();
        next[s] += dt;
        if pb.fits(&next) {
            t = next;
            g[s] += 1;
            if g[s] + 1 == m[s].len() {
                full[s] = true;
            }
        } else {
            full[s] = true;
        }
    }
    Ok(pb.partition(t))
}

/// Exhaustive max-min over every feasible combination; ties go to the larger sum of
/// normalised performance, then to the lexicographically first.
pub fn brute_force(pb: &Problem) -> Result<Partition> {
    pb.check()?;
    let mut best: Option<Partition> = None;
    for c in pb.combinations() {
        let cand = pb.partition(c);
        let better = match &best {
            None => true,
            Some(b) => {
                let (cm, bm) = (cand.min_perf(), b.min_perf());
                cm > bm + 1e-12
                    || ((cm - bm).abs() <= 1e-12
                        && cand.perf.iter().sum::<f64>() > b.perf.iter().sum::<f64>() + 1e-12)
            }
        };
        if better {
            best = Some(cand);
        }
    }
    best.ok_or_else(|| Error::Usage("no feasible partition".into()))
}

/// Exact max-min by integer linear programming: binary `x[i][j]` (kernel i gets j CTAs),
/// one j per kernel, the SM's capacity per resource, `z <= P_i` for every kernel;
/// maximise `z` plus a small tie-break toward the larger total.
pub fn ilp(pb: &Problem) -> Result<Partition> {
    pb.check()?;
    let p = pb.normalised();
    let k = p.len();
    let mut vars = ProblemVariables::new();
    let z = vars.add(variable().min(0.0).max(1.0));
    let x: Vec<Vec<_>> = p
        .iter()
        .map(|c| c.iter().map(|_| vars.add(variable().binary())).collect())
        .collect();
    let eps = 1e-4 / k as f64;
    let mut obj: Expression = z.into();
    for (i, xi) in x.iter().enumerate() {
        for (j, &v) in xi.iter().enumerate() {
            obj += eps * p[i][j] * v;
        }
    }
    let mut model = vars.maximise(obj).using(microlp);
    for (i, xi) in x.iter().enumerate() {
        let one: Expression = xi.iter().copied().sum();
        model = model.with(constraint!(one == 1.0));
        let perf: Expression = xi.iter().enumerate().map(|(j, &v)| p[i][j] * v).sum();
        model = model.with(constraint!(z <= perf));
    }
    for r in 0..5 {
        let used: Expression = x
            .iter()
            .enumerate()
            .flat_map(|(i, xi)| {
                xi.iter()
                    .enumerate()
                    .map(move |(j, &v)| ((j as u64 + 1) * pb.need[i][r]) as f64 * v)
            })
            .sum();
        model = model.with(constraint!(used <= pb.cap[r] as f64));
    }
    let sol = model
        .solve()
        .map_err(|e| Error::Usage(format!("the partition ILP has no solution: {e}")))?;
    let ctas: Vec<u32> = x
        .iter()
        .map(|xi| {
            xi.iter()
                .enumerate()
                .max_by(|a, b| sol.value(*a.1).total_cmp(&sol.value(*b.1)))
                .map(|(j, _)| j as u32 + 1)
                .unwrap_or(1)
        })
        .collect();
    Ok(pb.partition(ctas))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slots(n: u64) -> Need {
        [0, 0, 0, 0, n]
    }

    /// Fig. 3b: IMG saturating, NN cache-sensitive; 8 CTA slots.
    #[test]
    fn water_fill_finds_the_sweet_spot() {
        let pb = Problem {
            perf: vec![
                vec![0.3, 0.55, 0.75, 0.88, 0.95, 1.0, 1.0, 1.0],
                vec![0.5, 0.8, 0.95, 1.0, 0.9, 0.8, 0.7, 0.6],
            ],
            need: vec![[0, 0, 0, 0, 1]; 2],
            cap: slots(8),
        };
        let w = water_fill(&pb).unwrap();
        let b = brute_force(&pb).unwrap();
        assert_eq!(w.min_perf(), b.min_perf());
        // 5 IMG + 3 NN: both at 95% (the paper's "60% IMG, 40% NN" sweet spot, Fig. 3b).
        assert_eq!(w.ctas, vec![5, 3]);
        assert_eq!(ilp(&pb).unwrap().min_perf(), b.min_perf());
    }

    #[test]
    fn infeasible_is_a_clear_error() {
        let pb = Problem {
            perf: vec![vec![1.0], vec![1.0]],
            need: vec![[0, 0, 0, 40, 1], [0, 0, 0, 40, 1]],
            cap: [0, 0, 0, 64, 8],
        };
        let e = water_fill(&pb).unwrap_err().to_string();
        assert!(e.contains("does not fit"), "{e}");
        assert!(ilp(&pb).is_err() && brute_force(&pb).is_err());
    }

    #[test]
    fn combinations_respect_every_resource() {
        let pb = Problem {
            perf: vec![vec![1.0; 3], vec![1.0; 4]],
            need: vec![[256, 8, 0, 0, 1], [128, 4, 0, 0, 1]],
            cap: [768, 24, 0, 0, 8],
        };
        let c = pb.combinations();
        assert!(c.iter().all(|t| 256 * t[0] + 128 * t[1] <= 768));
        assert!(c.contains(&vec![1, 4]) && c.contains(&vec![2, 2]) && !c.contains(&vec![3, 1]));
    }
}
