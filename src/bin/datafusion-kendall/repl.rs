//! The interactive loop: statements end with `;`; backslash commands.
//!
//! On a terminal, lines are read with line editing and a history file
//! (`~/.datafusion_kendall_history`); from a pipe, plainly. Ctrl-C at the
//! prompt clears the statement being typed; during a query it cancels the
//! query and keeps the session. Ctrl-D (end of input) quits.

use std::io::{BufRead, IsTerminal};
use std::path::PathBuf;
use std::process::ExitCode;

use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;

use crate::{Shell, Stop};

const HELP: &str = "\
Statements end with ';' and may span lines. Shell commands:
  \\?          this help
  \\q          quit (also: quit, exit, Ctrl-D)
  \\d          list tables and views
  \\d NAME     describe table NAME
Settings: SHOW ALL (SHOW ALL VERBOSE with descriptions), SHOW kendall.kernel,
SET kendall.<option> = <value>. Ctrl-C cancels a running query.";

/// A line, or what happened instead.
enum Line {
    Text(String),
    /// Ctrl-C at the prompt.
    Interrupted,
    End,
}

/// Where lines come from.
enum Input {
    Editor(Box<DefaultEditor>, Option<PathBuf>),
    Plain(std::io::StdinLock<'static>),
}

impl Input {
    fn open() -> Input {
        if std::io::stdin().is_terminal()
            && let Ok(mut editor) = DefaultEditor::new()
        {
            let history =
                std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".datafusion_kendall_history"));
            if let Some(h) = &history {
                let _ = editor.load_history(h);
            }
            return Input::Editor(Box::new(editor), history);
        }
        Input::Plain(std::io::stdin().lock())
    }

    fn interactive(&self) -> bool {
        matches!(self, Input::Editor(..))
    }

    fn read(&mut self, prompt: &str) -> Line {
        match self {
            Input::Editor(editor, _) => match editor.readline(prompt) {
                Ok(line) => Line::Text(line),
                Err(ReadlineError::Interrupted) => Line::Interrupted,
                Err(ReadlineError::Eof) => Line::End,
                Err(e) => {
                    eprintln!("Error: {e}");
                    Line::End
                }
            },
            Input::Plain(stdin) => {
                let mut line = String::new();
                match stdin.read_line(&mut line) {
                    Ok(0) => Line::End,
                    Ok(_) => Line::Text(line.trim_end_matches(['\n', '\r']).to_string()),
                    Err(e) => {
                        eprintln!("Error: {e}");
                        Line::End
                    }
                }
            }
        }
    }

    fn remember(&mut self, statement: &str) {
        if let Input::Editor(editor, _) = self {
            let _ = editor.add_history_entry(statement.trim());
        }
    }

    fn save(&mut self) {
        if let Input::Editor(editor, Some(path)) = self {
            let _ = editor.save_history(path);
        }
    }
}

/// A backslash command (or `quit`/`exit`), when `line` is one.
enum Command {
    Quit,
    Help,
    Sql(String),
    Unknown(String),
}

fn command(line: &str) -> Option<Command> {
    let line = line.trim().trim_end_matches(';').trim();
    if matches!(line, "quit" | "exit") {
        return Some(Command::Quit);
    }
    let rest = line.strip_prefix('\\')?;
    let (name, arg) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let arg = arg.trim();
    Some(match (name, arg) {
        ("q", _) => Command::Quit,
        ("?" | "h" | "help", _) => Command::Help,
        ("d", "") => Command::Sql("SHOW TABLES".to_string()),
        ("d", table) => Command::Sql(format!("DESCRIBE {table}")),
        _ => Command::Unknown(line.to_string()),
    })
}

/// Runs statements from standard input until the end or `\q`.
pub async fn run(shell: &Shell) -> ExitCode {
    let mut input = Input::open();
    let interactive = input.interactive();
    if interactive {
        eprintln!(
            "datafusion-kendall {}: statements end with ';', \\? for help, \\q to quit.",
            env!("CARGO_PKG_VERSION")
        );
    }
    let mut buffer = String::new();
    let mut failed = false;
    loop {
        let prompt = if buffer.is_empty() { "kendall> " } else { "      -> " };
        let line = match input.read(prompt) {
            Line::Text(line) => line,
            Line::Interrupted => {
                buffer.clear();
                continue;
            }
            Line::End => break,
        };
        if buffer.trim().is_empty() {
            match command(&line) {
                Some(Command::Quit) => break,
                Some(Command::Help) => {
                    println!("{HELP}");
                    continue;
                }
                Some(Command::Unknown(c)) => {
                    eprintln!("Error: unknown command '{c}'; \\? lists the commands");
                    failed = true;
                    continue;
                }
                Some(Command::Sql(sql)) => {
                    input.remember(&line);
                    match execute(shell, &sql, interactive).await {
                        Ok(ok) => failed |= !ok,
                        Err(code) => return code,
                    }
                    continue;
                }
                None => {}
            }
        }
        buffer.push_str(&line);
        buffer.push('\n');
        if line.trim_end().ends_with(';') {
            let sql = std::mem::take(&mut buffer);
            input.remember(&sql);
            match execute(shell, &sql, interactive).await {
                Ok(ok) => failed |= !ok,
                Err(code) => return code,
            }
        }
    }
    if !buffer.trim().is_empty() {
        match execute(shell, &buffer, interactive).await {
            Ok(ok) => failed |= !ok,
            Err(code) => return code,
        }
    }
    input.save();
    if failed && !interactive {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Runs `sql`: `Ok(true)` when it succeeded, `Ok(false)` when it failed or
/// was cancelled in an interactive session (which goes on), `Err(code)` when
/// the shell must end (a closed pipe; Ctrl-C when not interactive).
async fn execute(shell: &Shell, sql: &str, interactive: bool) -> Result<bool, ExitCode> {
    match shell.run(sql).await {
        Ok(()) => Ok(true),
        Err(Stop::Error(e)) => {
            eprintln!("Error: {e}");
            Ok(false)
        }
        Err(Stop::Interrupted) if interactive => {
            eprintln!("^C Query cancelled.");
            Ok(false)
        }
        Err(stop) => Err(stop.report()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backslash_commands() {
        assert!(matches!(command("\\q"), Some(Command::Quit)));
        assert!(matches!(command(" quit; "), Some(Command::Quit)));
        assert!(matches!(command("\\?"), Some(Command::Help)));
        assert!(matches!(command("\\d"), Some(Command::Sql(s)) if s == "SHOW TABLES"));
        assert!(matches!(command("\\d expr"), Some(Command::Sql(s)) if s == "DESCRIBE expr"));
        assert!(matches!(command("\\x"), Some(Command::Unknown(_))));
        assert!(command("SELECT 1;").is_none());
    }
}
