//! The study file's checks: every value validated before any simulation (duplicates,
//! zero/NaN/negative settings, unknown names, fallbacks made explicit), each error naming
//! the key and what was expected.

use super::*;

impl StudySpec {
    /// Every value checked before any simulation: errors name the key and what is wrong.
    pub fn check(&self) -> std::result::Result<(), StudyFileError> {
        self.problem().map_err(StudyFileError)
    }

    /// [`Self::check`], its message a plain string.
    fn problem(&self) -> std::result::Result<(), String> {
        if self.grid_scale == 0 {
            return Err("grid_scale must be at least 1".into());
        }
        if self.max_cycles == 0 {
            return Err("max_cycles must be positive".into());
        }
        if !(self.arrival_fraction.is_finite() && (0.0..=1.0).contains(&self.arrival_fraction)) {
            return Err(format!(
                "arrival_fraction {} must be within 0 to 1",
                self.arrival_fraction
            ));
        }
        if !self.completion && self.arrivals.iter().any(|a| *a != Arrival::Together) {
            return Err("`arrivals` other than together need `completion = true`".into());
        }
        if let Some(x) = self.isu_split {
            // Issue-slot utilisation is a fraction (at most 1): a split above it puts
            // every workload in one class without a word.
            if !(x.is_finite() && x > 0.0 && x <= 1.0) {
                return Err(format!(
                    "isu_split {} must be a fraction within 0 to 1, above 0 (issue-slot utilisation is at most 1)",
                    crate::error::num(x)
                ));
            }
        }
        if let Some(f) = &self.fast_forward {
            f.check().map_err(|e| format!("[fast_forward] {e}"))?;
        }
        self.check_lists()?;
        for p in self.solo.iter().chain(&self.makespan_reference) {
            PolicySpec::from_name(p).map_err(|e| e.to_string())?;
        }
        self.sweep_text()?;
        if let Some(s) = &self.solo_sweep {
            if s.values.is_empty() {
                return Err("solo_sweep.values is empty".into());
            }
            if let Some(v) = repeated(&s.values) {
                return Err(format!("solo_sweep.values lists {v} twice"));
            }
            for v in &s.values {
                self.swept(*v).map_err(|e| e.to_string())?;
            }
        }
        if !self.completion && (!self.solo.is_empty() || self.solo_sweep.is_some()) {
            return Err(format!(
                "`solo` / `solo_sweep` run each benchmark alone to completion under a policy and \
                 compare it with its alone run: they need `completion = true` (this study runs \
                 to {})",
                if self.fixed_window {
                    "a fixed window"
                } else {
                    "instruction budgets"
                }
            ));
        }
        if let Some(f) = &self.figures {
            let sets = PolicySpec::figure_set_names();
            if !sets.contains(&f.as_str()) {
                let (last, rest) = sets.split_last().unwrap_or((&"", &[]));
                return Err(format!(
                    "figures = `{f}`: expected {} or {last}",
                    rest.join(", ")
                ));
            }
        }
        if self.completion && self.fixed_window {
            return Err("`completion` and `fixed_window` exclude each other".into());
        }
        if !self.completion && self.window == 0 {
            return Err("`window` must be positive".into());
        }
        for (key, w) in [("window", self.window), ("curve_window", self.curve_window)] {
            if w > self.max_cycles && (key == "curve_window" || !self.completion) {
                return Err(format!(
                    "{key} = {w} exceeds max_cycles = {}: every run it asks for would stop at \
                     the cycle cap",
                    self.max_cycles
                ));
            }
        }
        if self.policies.is_empty() {
            return Err("`policies` is empty; expected at least one policy".into());
        }
        if self.groups.is_empty() {
            return Err("`groups` is empty; expected at least one group of workloads".into());
        }
        check_all("policies", &self.policies)?;
        for p in expand(&self.policies) {
            self.policy(&p).map_err(|e| e.to_string())?;
        }
        for name in self.params.keys() {
            if !self.runs(name) {
                return Err(format!(
                    "[params.{name}] is given but no group runs policy `{name}`"
                ));
            }
        }
        for g in &self.groups {
            self.check_group(g)?;
        }
        self.check_roles()?;
        self.check_params()?;
        self.check_slice_grid()
    }

    /// No list names a benchmark, group, policy or arrival order twice.
    fn check_lists(&self) -> std::result::Result<(), String> {
        let benches: Vec<&str> = self.benches.iter().map(|b| b.name.as_str()).collect();
        if let Some(n) = repeated(&benches) {
            return Err(format!(
                "benchmark `{n}` is listed twice in [[benches]]; each name once"
            ));
        }
        let groups: Vec<&str> = self.groups.iter().map(|g| g.name.as_str()).collect();
        if let Some(n) = repeated(&groups) {
            return Err(format!(
                "group `{n}` is listed twice in [[groups]]; each name once"
            ));
        }
        if let Some(p) = repeated(&self.policies) {
            return Err(format!("policies lists `{p}` twice"));
        }
        if let Some(p) = repeated(&self.solo) {
            return Err(format!("solo lists `{p}` twice"));
        }
        if let Some(a) = repeated(&self.arrivals) {
            return Err(format!(
                "arrivals lists {} twice",
                toml::Value::try_from(a).map_or_else(|_| format!("{a:?}"), |v| v.to_string())
            ));
        }
        Ok(())
    }

    /// One group: its policies and benchmark names, its kind's keys, and that it forms
    /// workloads the study's arrival orders apply to.
    fn check_group(&self, g: &Group) -> std::result::Result<(), String> {
        let own = g.policies.as_deref().unwrap_or_default();
        check_all(&format!("group {}: policies", g.name), own)?;
        for p in expand(own) {
            self.policy(&p)
                .map_err(|e| format!("group {}: {e}", g.name))?;
        }
        if let Some(p) = repeated(g.policies.as_deref().unwrap_or_default()) {
            return Err(format!("group {}: policies lists `{p}` twice", g.name));
        }
        for (key, list) in [("a", &g.a), ("b", &g.b)] {
            if let Some(n) = repeated(list) {
                return Err(format!(
                    "group {}: `{key}` lists `{n}` twice; each benchmark once",
                    g.name
                ));
            }
        }
        for n in g.a.iter().chain(&g.b) {
            if !self.benches.iter().any(|b| &b.name == n) {
                return Err(format!(
                    "group {} names benchmark `{n}`, which is not in `benches` ({})",
                    g.name,
                    self.bench_names()
                ));
            }
        }
        if g.kind == GroupKind::Random {
            if g.take_a as usize > g.a.len() || g.take_b as usize > g.b.len() {
                return Err(format!(
                    "group {}: take_a = {} / take_b = {} exceed the {} / {} benchmarks listed",
                    g.name,
                    g.take_a,
                    g.take_b,
                    g.a.len(),
                    g.b.len()
                ));
            }
            if g.count == 0 || g.take_a + g.take_b == 0 {
                return Err(format!(
                    "group {}: a random group needs count > 0 and take_a + take_b > 0",
                    g.name
                ));
            }
            if g.count > MAX_RANDOM_MIXES {
                return Err(format!(
                    "group {}: count = {} is more than {MAX_RANDOM_MIXES} mixes",
                    g.name, g.count
                ));
            }
        } else if g.take_a as u64 + g.take_b as u64 + g.count as u64 > 0 || g.seed != 0 {
            return Err(format!(
                "group {}: take_a, take_b, count and seed are for kind = \"random\"",
                g.name
            ));
        }
        if !matches!(
            g.kind,
            GroupKind::Within | GroupKind::WithSelf | GroupKind::Random
        ) && g.b.is_empty()
        {
            return Err(format!("group {} of kind {:?} needs `b`", g.name, g.kind));
        }
        let w = g.workloads();
        if w.is_empty() {
            return Err(format!(
                "group {} forms no workload (kind {:?} with a = {:?}, b = {:?})",
                g.name, g.kind, g.a, g.b
            ));
        }
        let ordered = self.arrivals.iter().any(|a| *a != Arrival::Together);
        if let Some(x) = w.iter().find(|x| ordered && x.len() != 2) {
            return Err(format!(
                "group {} forms workloads of {} applications ({}), and `arrivals` other than \
                 together apply to two-application workloads only; run it in a study with \
                 arrivals = [\"together\"]",
                g.name,
                x.len(),
                x.join("+")
            ));
        }
        Ok(())
    }

    /// The policies a group runs (its own list or the study's).
    pub(super) fn group_policies(&self, g: &Group) -> Vec<String> {
        expand(g.policies.as_deref().unwrap_or(&self.policies))
    }

    /// `baseline` and `proposed` run in some group, `makespan_reference` in every group:
    /// otherwise the figures would silently fall back to another policy or drop the
    /// measure.
    fn check_roles(&self) -> std::result::Result<(), String> {
        for (key, role) in [("baseline", &self.baseline), ("proposed", &self.proposed)] {
            let Some(p) = role else { continue };
            PolicySpec::from_name(p).map_err(|e| format!("{key}: {e}"))?;
            if !self
                .groups
                .iter()
                .any(|g| self.group_policies(g).contains(p))
            {
                return Err(format!(
                    "{key} = `{p}`, but no group runs policy `{p}`; add it to `policies`"
                ));
            }
        }
        for p in &self.paper_ranking {
            PolicySpec::from_name(p).map_err(|e| format!("paper_ranking: {e}"))?;
        }
        if let Some(p) = &self.makespan_reference {
            if let Some(g) = self
                .groups
                .iter()
                .find(|g| !self.group_policies(g).contains(p))
            {
                return Err(format!(
                    "makespan_reference = `{p}`, but group {} does not run policy `{p}` (its \
                     workloads would have no makespan_speedup); add it to the policies",
                    g.name
                ));
            }
        }
        Ok(())
    }

    /// Policy parameters that name applications name benchmarks of the study, and offline
    /// profiles fit in the cycle cap.
    fn check_params(&self) -> std::result::Result<(), String> {
        let names: Vec<&str> = self.benches.iter().map(|b| b.name.as_str()).collect();
        for name in self.params.keys() {
            let p = self.policy(name).map_err(|e| e.to_string())?;
            p.check_apps(&names)
                .map_err(|e| format!("[params.{name}] {e} (benches: {})", self.bench_names()))?;
        }
        let run = expand(&self.policies)
            .into_iter()
            .chain(self.groups.iter().flat_map(|g| self.group_policies(g)))
            .chain(self.solo.iter().cloned());
        for name in run {
            let p = self.policy(&name).map_err(|e| e.to_string())?;
            if let Some(c) = p.profile_cycles().filter(|&c| c > self.max_cycles) {
                return Err(format!(
                    "[params.{name}] profile_cycles = {c} exceeds max_cycles = {}: the offline \
                     profiles must fit in the study's cycle cap",
                    self.max_cycles
                ));
            }
        }
        Ok(())
    }

    /// `[slice_grid]`: no empty or repeating list, benchmarks of the study.
    fn check_slice_grid(&self) -> std::result::Result<(), String> {
        let Some(g) = &self.slice_grid else {
            return Ok(());
        };
        let empty = [
            ("benches", g.benches.is_empty()),
            ("sms", g.sms.is_empty()),
            ("channels", g.channels.is_empty()),
        ];
        if let Some((k, _)) = empty.iter().find(|x| x.1) {
            return Err(format!(
                "slice_grid.{k} is empty; expected at least one value"
            ));
        }
        if let Some(n) = g
            .benches
            .iter()
            .find(|n| !self.benches.iter().any(|b| &&b.name == n))
        {
            return Err(format!(
                "slice_grid.benches names `{n}`, which is not in `benches` ({})",
                self.bench_names()
            ));
        }
        if let Some(n) = repeated(&g.benches) {
            return Err(format!("slice_grid.benches lists `{n}` twice"));
        }
        for (k, l) in [("sms", &g.sms), ("channels", &g.channels)] {
            if let Some(v) = repeated(l) {
                return Err(format!("slice_grid.{k} lists {v} twice"));
            }
            if l.contains(&0) {
                return Err(format!("slice_grid.{k} lists 0; expected positive counts"));
            }
        }
        Ok(())
    }

    fn bench_names(&self) -> String {
        self.benches
            .iter()
            .map(|b| b.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}
