//! A private PostgreSQL cluster for the tests: `initdb` into a temporary directory and
//! `pg_ctl` on a free loopback port (TCP only, trust authentication, no fsync: a commit
//! reaches the OS, so it survives a stop of the server, not of the machine), as the
//! `postgres` user when the tests run as root (PostgreSQL refuses to run as root). The
//! binaries come from Debian's `/usr/lib/postgresql/*/bin` (the newest) or PATH.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::scale::free_port;

/// A running cluster; stopped (immediately) when dropped.
#[derive(Debug)]
pub struct Postgres {
    dir: tempfile::TempDir,
    bin: PathBuf,
    /// The port it listens on.
    pub port: u16,
    running: bool,
    /// More server settings (`-c` options).
    extra: String,
}

/// Where `initdb` and `pg_ctl` are.
fn bin_dir() -> PathBuf {
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|d| d.flatten().map(|e| e.path().join("bin")).collect())
        .unwrap_or_default();
    versions.retain(|p| p.join("initdb").exists());
    versions.sort_by_key(|p| {
        p.parent()
            .and_then(|v| v.file_name())
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    });
    if let Some(newest) = versions.pop() {
        return newest;
    }
    let found = std::env::var_os("PATH")
        .and_then(|p| std::env::split_paths(&p).find(|d| d.join("initdb").exists()));
    found.unwrap_or_else(|| {
        panic!(
            "initdb not found: install Debian's postgresql package (scripts/test.sh does when \
             run as root)"
        )
    })
}

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// `program` (of the cluster's binaries) with `args`, as `postgres` when we are root.
fn pg_command(bin: &Path, program: &str, args: &[&str]) -> Command {
    let path = bin.join(program);
    if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(path).args(args);
        c
    } else {
        let mut c = Command::new(path);
        c.args(args);
        c
    }
}

fn run(mut c: Command, what: &str) -> String {
    let out = c
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

impl Postgres {
    /// A new cluster on a free port, started.
    pub async fn start() -> Postgres {
        Self::start_with_tls(None).await
    }

    /// A new cluster that also takes TLS connections with this certificate and key (PEM
    /// files), started.
    pub async fn start_with_tls(tls: Option<(&Path, &Path)>) -> Postgres {
        let bin = bin_dir();
        let dir = tempfile::tempdir().unwrap();
        if is_root() {
            run(
                {
                    let mut c = Command::new("chown");
                    c.arg("postgres:").arg(dir.path());
                    c
                },
                "chown",
            );
        }
        let data = dir.path().join("data");
        run(
            pg_command(
                &bin,
                "initdb",
                &[
                    "-D",
                    data.to_str().unwrap(),
                    "-A",
                    "trust",
                    "-U",
                    "postgres",
                    "-E",
                    "UTF8",
                    "--no-sync",
                ],
            ),
            "initdb",
        );
        let mut extra = String::new();
        if let Some((cert, key)) = tls {
            // The server reads them as its own user, and wants the key private.
            for (from, to) in [(cert, "server.crt"), (key, "server.key")] {
                let dest = dir.path().join(to);
                std::fs::copy(from, &dest).unwrap();
                let mut c = Command::new("chmod");
                c.arg("600").arg(&dest);
                run(c, "chmod");
                if is_root() {
                    let mut c = Command::new("chown");
                    c.arg("postgres:").arg(&dest);
                    run(c, "chown");
                }
            }
            let d = dir.path().to_str().unwrap();
            extra = format!(
                " -c ssl=on -c ssl_cert_file={d}/server.crt -c ssl_key_file={d}/server.key"
            );
        }
        let mut pg = Postgres {
            dir,
            bin,
            port: free_port(),
            running: false,
            extra,
        };
        pg.start_again().await;
        pg
    }

    fn data(&self) -> String {
        self.dir.path().join("data").to_str().unwrap().to_owned()
    }

    /// Starts the stopped cluster again, on the same port, with the same data.
    pub async fn start_again(&mut self) {
        let options = format!(
            "-p {} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c fsync=off \
             -c full_page_writes=off -c max_connections=300{}",
            self.port, self.extra
        );
        let log = format!("{}/log", self.dir.path().to_str().unwrap());
        let data = self.data();
        let (bin, what) = (
            self.bin.clone(),
            format!("pg_ctl start on port {}", self.port),
        );
        tokio::task::spawn_blocking(move || {
            run(
                pg_command(
                    &bin,
                    "pg_ctl",
                    &[
                        "-D", &data, "-l", &log, "-w", "-t", "60", "-o", &options, "start",
                    ],
                ),
                &what,
            )
        })
        .await
        .unwrap();
        self.running = true;
    }

    /// Stops it at once (as a crash would: no checkpoint, connections cut).
    pub async fn stop(&mut self) {
        let (bin, data) = (self.bin.clone(), self.data());
        tokio::task::spawn_blocking(move || stop(&bin, &data))
            .await
            .unwrap();
        self.running = false;
    }

    /// `postgres://postgres@127.0.0.1:PORT/postgres?sslmode=disable`.
    pub fn url(&self) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{}/postgres?sslmode=disable",
            self.port
        )
    }

    /// Runs `sql` with psql; its output, one row per line, columns separated by `|`.
    pub fn psql(&self, sql: &str) -> String {
        let mut c = Command::new(self.bin.join("psql"));
        c.args([
            "-X",
            "-A",
            "-t",
            "-v",
            "ON_ERROR_STOP=1",
            "-d",
            &self.url(),
            "-c",
            sql,
        ]);
        run(c, "psql")
    }

    /// Rows of `table` in schema `mcp`.
    pub fn count(&self, table: &str) -> u64 {
        self.psql(&format!("SELECT count(*) FROM mcp.{table}"))
            .parse()
            .unwrap()
    }
}

fn stop(bin: &Path, data: &str) {
    let _ = pg_command(
        bin,
        "pg_ctl",
        &["-D", data, "-m", "immediate", "-w", "stop"],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .status();
}

impl Drop for Postgres {
    fn drop(&mut self) {
        if self.running {
            stop(&self.bin, &self.data());
        }
    }
}
