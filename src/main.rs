//! The `strata` command: runs a broker. With no arguments it is an embedded single-node broker
//! on 127.0.0.1:9092 with its data in `./strata-data`; `--config server.properties` reads a
//! Kafka properties file and `--override key=value` sets any key, as Kafka's scripts do.
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "strata",
    version,
    about = "A Kafka-wire-compatible streaming broker"
)]
struct Cli {
    /// A Kafka server.properties file.
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    /// Sets a config key, overriding the file (repeatable), e.g. `--override log.dirs=./data`.
    #[arg(long = "override", value_name = "KEY=VALUE", global = true)]
    overrides: Vec<String>,
    /// Log lines as `text` or `json` (one object per line); wins over `strata.log.format`.
    #[arg(long = "log-format", value_name = "FORMAT", global = true)]
    log_format: Option<String>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the broker (the default).
    Serve,
    /// Print the supported-API table as Markdown (docs/supported-apis.md is generated from it).
    ApiTable,
    /// Print the supported configuration keys as Markdown (docs/configuration.md's table).
    ConfigKeys,
    /// Prepare log dirs before a first start, as Kafka's `kafka-storage` tool does.
    Storage {
        #[command(subcommand)]
        action: StorageCommand,
    },
}

#[derive(Subcommand, Debug)]
enum StorageCommand {
    /// Print a new cluster id.
    RandomUuid,
    /// Write meta.properties (and the initial controller quorum) into the configured log dirs.
    Format {
        /// The cluster id (from `strata storage random-uuid`).
        #[arg(short = 't', long = "cluster-id")]
        cluster_id: String,
        /// This controller is the only voter of a new quorum (KIP-853).
        #[arg(short = 's', long, conflicts_with = "initial_controllers")]
        standalone: bool,
        /// The voters of a new quorum: `id@host:port:directory-id,...` (KIP-853).
        #[arg(short = 'I', long = "initial-controllers")]
        initial_controllers: Option<String>,
        /// Skip log dirs that are formatted already instead of failing.
        #[arg(short = 'g', long = "ignore-formatted")]
        ignore_formatted: bool,
        /// A SCRAM credential for the bootstrap metadata, repeatable (KIP-900):
        /// `SCRAM-SHA-512=[name=admin,password=admin-secret]` or
        /// `SCRAM-SHA-256=[name=alice,salt=<b64>,saltedpassword=<b64>,iterations=8192]`.
        #[arg(short = 'S', long = "add-scram")]
        add_scram: Vec<String>,
        /// The release version the cluster's features start at: its `metadata.version`
        /// (`3.9`, `4.0-IV3`) and the levels Kafka gives the other features at it, within what
        /// Strata supports (default: 4.1-IV0).
        #[arg(short = 'r', long = "release-version")]
        release_version: Option<String>,
        /// The level one feature starts at, repeatable: `group.version=0`.
        #[arg(short = 'f', long = "feature")]
        feature: Vec<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let cli_format = match cli
        .log_format
        .as_deref()
        .map(strata::logging::LogFormat::from_name)
    {
        Some(None) => {
            eprintln!("error: --log-format must be text or json");
            return ExitCode::from(2);
        }
        Some(Some(f)) => Some(f),
        None => None,
    };
    let filter =
        std::env::var("STRATA_LOG").unwrap_or_else(|_| strata::logging::DEFAULT_FILTER.to_string());
    match cli.command {
        Some(Command::ApiTable) => {
            print!("{}", strata::handlers::api_table_markdown());
            return ExitCode::SUCCESS;
        }
        Some(Command::ConfigKeys) => {
            print!("{}", strata::handlers::config_table_markdown());
            return ExitCode::SUCCESS;
        }
        Some(Command::Storage { action }) => {
            strata::logging::init(cli_format.unwrap_or_default(), &filter);
            return storage(action, cli.config.as_deref(), &cli.overrides);
        }
        _ => {}
    }
    let (config, warnings) =
        match strata::config::BrokerConfig::load_file(cli.config.as_deref(), &cli.overrides) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        };
    let format = cli_format
        .or_else(|| strata::logging::LogFormat::from_name(&config.log_format))
        .unwrap_or_default();
    strata::logging::init(format, &filter);
    for w in warnings {
        tracing::warn!("{w}");
    }
    raise_open_file_limit();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async move {
        // The SIGTERM handler is installed before the broker announces itself, so a SIGTERM
        // right after "strata started" is a clean shutdown, not the default kill.
        let term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        let running = match strata::server::startup::start(config, strata::clock::system()).await {
            Ok(r) => r,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        };
        let token = running.shutdown_token();
        tokio::spawn(async move {
            wait_for_signal(term).await;
            tracing::info!("shutdown requested");
            token.cancel();
        });
        match running.wait().await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error during shutdown: {e}");
                ExitCode::FAILURE
            }
        }
    })
}

/// `strata storage ...`: prints, or formats the log dirs of `--config`.
fn storage(
    action: StorageCommand,
    config: Option<&std::path::Path>,
    overrides: &[String],
) -> ExitCode {
    let StorageCommand::Format {
        cluster_id,
        standalone,
        initial_controllers,
        ignore_formatted,
        add_scram,
        release_version,
        feature,
    } = action
    else {
        println!("{}", strata::cluster::format::random_uuid());
        return ExitCode::SUCCESS;
    };
    let Some(path) = config else {
        eprintln!("error: strata storage format needs --config <server.properties>");
        return ExitCode::from(2);
    };
    let config = match strata::config::BrokerConfig::load_file(Some(path), overrides) {
        Ok((c, _)) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let options = strata::cluster::format::FormatOptions {
        cluster_id,
        standalone,
        initial_controllers,
        ignore_formatted,
        add_scram,
        release_version,
        features: feature,
    };
    match strata::cluster::format::format(&config, &options) {
        Ok(lines) => {
            for l in lines {
                println!("{l}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Every partition keeps its segment and index files open, so thousands of partitions need
/// more descriptors than the usual soft limit: raise it to the hard limit, as Kafka's docs ask
/// operators to do by hand.
fn raise_open_file_limit() {
    // SAFETY: getrlimit/setrlimit only read and write the struct we pass.
    unsafe {
        let mut lim: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                tracing::warn!("could not raise the open-file limit");
            }
        }
    }
}

async fn wait_for_signal(term: Option<tokio::signal::unix::Signal>) {
    let Some(mut term) = term else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
