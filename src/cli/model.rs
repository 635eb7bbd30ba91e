//! `gpumodel model`: list the bundled GPU models, print or save the effective model (with
//! `--set key=value` overrides applied and validated), and the occupancy of a launch on it.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use crate::arch::{occupancy, GpuSpec, Launch};

#[derive(Args, Debug)]
#[command(after_help = "Example:\n  gpumodel model qv100 --set sm.count=40 -o my.toml")]
pub struct ModelArgs {
    /// Built-in model name (see --list) or a .toml path.
    #[arg(default_value = "qv100")]
    pub gpu: String,
    #[command(flatten)]
    pub overrides: super::SetArgs,
    /// List the built-in models.
    #[arg(long)]
    pub list: bool,
    /// Write the effective model to this file instead of printing it.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Print the occupancy of a launch: THREADS,REGS,SMEM (e.g. 128,64,7208).
    #[arg(long, value_name = "THREADS,REGS,SMEM")]
    pub occupancy: Option<String>,
}

pub fn run(a: &ModelArgs) -> Result<()> {
    if a.list {
        for n in GpuSpec::builtin_names() {
            let s = GpuSpec::builtin(n)?;
            println!("{n:<16} {}", s.description);
        }
        return Ok(());
    }
    let spec = a.overrides.load(&a.gpu)?;
    if let Some(o) = &a.occupancy {
        let v: Vec<u32> = o
            .split(',')
            .map(|x| x.trim().parse::<u32>())
            .collect::<Result<_, _>>()
            .map_err(|_| {
                crate::Error::Usage(format!("--occupancy expects THREADS,REGS,SMEM, got '{o}'"))
            })?;
        if v.len() != 3 {
            return Err(crate::Error::Usage(format!(
                "--occupancy expects THREADS,REGS,SMEM, got '{o}'"
            ))
            .into());
        }
        let occ = occupancy(&spec, &Launch::new(v[0], v[1], v[2]))?;
        println!("{}", serde_json::to_string_pretty(&occ)?);
        return Ok(());
    }
    let text = spec.to_toml_string();
    match &a.output {
        Some(p) => {
            let inputs: Vec<&str> = [a.gpu.as_str()]
                .into_iter()
                .filter(|g| g.ends_with(".toml"))
                .collect();
            crate::output::Guard::of(inputs).write(p, text.as_bytes())?;
            println!("wrote the effective model to {}", p.display());
        }
        None => print!("{text}"),
    }
    Ok(())
}
