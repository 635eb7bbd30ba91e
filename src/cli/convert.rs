//! `gpumodel convert` and `gpumodel export`.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use clap::Args;

use crate::trace::accel::ParseOptions;
use crate::trace::app::{convert, open_app};

#[derive(Args, Debug)]
#[command(after_help = "Example:\n  gpumodel convert traces/samples/bfs_v3_sm80 -o bfs.gmt")]
pub struct ConvertArgs {
    /// Accel-Sim folder, kernelslist.g, .traceg[.gz|.xz], NVBit mem_trace log or synthetic spec.
    pub input: PathBuf,
    /// Output .gmt file.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Count opcodes missing from the ISA table and treat them as integer ALU ops instead of
    /// failing.
    #[arg(long)]
    pub lenient_opcodes: bool,
    /// Text per parallel parse chunk, in MiB (1 to 256; `2 × threads` chunks are in
    /// flight at once).
    #[arg(long, default_value_t = 4, value_name = "MIB",
          value_parser = clap::value_parser!(u16).range(1..=256))]
    pub chunk_mib: u16,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: &ConvertArgs, quiet: bool) -> Result<()> {
    super::check_output(&a.output, &[&a.input])?;
    let opts = ParseOptions {
        lenient_opcodes: a.lenient_opcodes,
        chunk_bytes: (a.chunk_mib as usize) << 20,
    };
    let pb = super::progress::parse_bar(quiet);
    let t = Instant::now();
    let r = convert(&a.input, &a.output, &opts, &|d, n, b| {
        super::progress::report(&pb, d, n, b)
    });
    pb.finish_and_clear();
    let r = r?;
    let secs = t.elapsed().as_secs_f64();
    for n in &r.notes {
        eprintln!("note: {n}");
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
        return Ok(());
    }
    println!(
        "wrote {} ({} kernels, {} warp instructions)",
        a.output.display(),
        r.kernels,
        r.warp_insts
    );
    if r.text_lines > 0 {
        println!(
            "text: {} lines, {:.1} MiB -> .gmt {:.2} MiB ({:.1}x smaller) in {:.2} s ({:.2} M lines/s)",
            r.text_lines,
            r.text_bytes as f64 / (1 << 20) as f64,
            r.gmt_bytes as f64 / (1 << 20) as f64,
            r.text_bytes as f64 / r.gmt_bytes.max(1) as f64,
            secs,
            r.text_lines as f64 / secs / 1e6
        );
    } else {
        println!(
            ".gmt: {:.2} MiB in {:.2} s",
            r.gmt_bytes as f64 / (1 << 20) as f64,
            secs
        );
    }
    Ok(())
}

#[derive(Args, Debug)]
#[command(after_help = "Example:\n  gpumodel export bfs.gmt -o bfs-text/")]
pub struct ExportArgs {
    /// Any runnable input (.gmt, synthetic spec, trace folder...).
    pub input: PathBuf,
    /// Output folder for kernel-N.traceg files and kernelslist.g.
    #[arg(short, long)]
    pub output: PathBuf,
}

pub fn export(a: &ExportArgs) -> Result<()> {
    super::check_output_dir(&a.output)?;
    let app = open_app(&a.input, &ParseOptions::default())?;
    let ks: Vec<&dyn crate::trace::KernelSource> = app.kernels.iter().map(|k| k.as_ref()).collect();
    let guard = crate::output::Guard::of([&a.input]);
    crate::trace::text::write_app_guarded(&ks, &app.commands, &a.output, &guard)?;
    println!(
        "wrote {} kernel(s) as Accel-Sim text in {}",
        ks.len(),
        a.output.display()
    );
    Ok(())
}

#[derive(Args, Debug)]
#[command(
    after_help = "Example:\n  gpumodel synth traces/examples/stream_copy.toml -o stream_copy.gmt"
)]
pub struct SynthArgs {
    /// Synthetic kernel spec (.toml; see `traces/examples/` and the paper suites in `traces/`).
    pub spec: PathBuf,
    /// Write the generated kernel as a .gmt file.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Write the generated kernel as an Accel-Sim trace folder (kernelslist.g + kernel-1.traceg).
    #[arg(long, value_name = "DIR")]
    pub text: Option<PathBuf>,
}

pub fn synth(a: &SynthArgs) -> Result<()> {
    if a.output.is_none() && a.text.is_none() {
        return Err(crate::Error::Usage("synth: give -o FILE.gmt and/or --text DIR".into()).into());
    }
    if let Some(out) = &a.output {
        super::check_output(out, &[&a.spec])?;
        let r = convert(&a.spec, out, &ParseOptions::default(), &|_, _, _| {})?;
        println!(
            "wrote {} ({} warp instructions, {:.2} MiB)",
            out.display(),
            r.warp_insts,
            r.gmt_bytes as f64 / 1048576.0
        );
    }
    if let Some(dir) = &a.text {
        export(&ExportArgs {
            input: a.spec.clone(),
            output: dir.clone(),
        })?;
    }
    Ok(())
}
