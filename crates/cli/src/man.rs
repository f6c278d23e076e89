//! `krec man [DIR]`: one man page for `krec` and one per subcommand (`krec-consume.1`), made
//! by clap_mangen from the same definition the command line is parsed with.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use clap_mangen::Man;

use crate::cluster::{finish, print};
use crate::Error;

/// Arguments of `krec man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// Where to write the pages (created if missing), e.g. ~/.local/share/man/man1.
    #[arg(default_value = ".")]
    pub dir: PathBuf,
}

/// Writes the pages of `command` (the whole `krec` command line) and prints their paths.
pub fn run(args: ManArgs, command: clap::Command) -> ExitCode {
    let outcome = write_pages(command, &args.dir).and_then(|written| {
        let lines: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
        print(&format!("{}\n", lines.join("\n")))
    });
    finish("man", outcome)
}

/// Writes one page per command, subcommands first, and returns their paths.
pub fn write_pages(command: clap::Command, dir: &Path) -> Result<Vec<PathBuf>, Error> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Io {
        context: format!("creating {}", dir.display()),
        source,
    })?;
    let source = format!("krec {}", env!("CARGO_PKG_VERSION"));
    let mut command = command.disable_help_subcommand(true);
    command.build();
    let mut pages = vec![command.clone()];
    pages.extend(
        command
            .get_subcommands()
            .filter(|s| !s.is_hide_set())
            .cloned(),
    );
    let mut written = Vec::with_capacity(pages.len());
    for page in pages {
        let man = Man::new(page).source(source.clone()).manual("krec manual");
        let path = dir.join(man.get_filename());
        write_page(&man, &path).map_err(|source| Error::Io {
            context: format!("writing {}", path.display()),
            source,
        })?;
        written.push(path);
    }
    Ok(written)
}

fn write_page(man: &Man, path: &Path) -> std::io::Result<()> {
    let mut out = BufWriter::new(File::create(path)?);
    man.render(&mut out)?;
    out.flush()
}
