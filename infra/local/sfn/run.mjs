// run.mjs: validates and runs infra/scan.asl.json on this machine for
// infra/scan_test.go.
//
//   node run.mjs validate DEFINITION
//     Validates the definition with asl-validator (after substituting the
//     template's DefinitionSubstitutions with a placeholder Lambda ARN) and
//     prints {"valid": bool, "errors": [...]}.
//   node run.mjs run DEFINITION INPUT_JSON ENDPOINT [OPTIONS_JSON]
//     Runs the state machine with aws-local-stepfunctions. Every Task state
//     is overridden: its input is POSTed to ENDPOINT?state=<name>; a 200
//     answer is the task's result, any other answer {"errorType",
//     "errorMessage"} fails the task with that error name (as a Lambda error
//     would). OPTIONS_JSON may set "timeoutSeconds" (replaces the top-level
//     TimeoutSeconds), "waitMs" (every Wait state) and "retryMs" (every
//     Retry pause). Prints {"status": "SUCCEEDED"|"FAILED"|"TIMED_OUT",
//     "output", "error", "cause", "states": [entered state names], "retried": [state
//     names, once per retry]}.
import { readFileSync } from 'node:fs';

// Node 20 lacks Promise.withResolvers, which aws-local-stepfunctions uses.
if (typeof Promise.withResolvers !== 'function') {
  Promise.withResolvers = function () {
    let resolve, reject;
    const promise = new Promise((res, rej) => { resolve = res; reject = rej; });
    return { promise, resolve, reject };
  };
}

const placeholderArn = 'arn:aws:lambda:us-east-1:123456789012:function:ScanFunction';

function load(path) {
  const text = readFileSync(path, 'utf8').replaceAll('${ScanFunctionArn}', placeholderArn);
  return JSON.parse(text);
}

function out(v) {
  process.stdout.write(JSON.stringify(v) + '\n');
}

async function validate(path) {
  const { default: aslValidator } = await import('asl-validator');
  const validator = aslValidator.default ?? aslValidator;
  const { isValid, errors } = validator(load(path));
  out({ valid: isValid, errors: errors ?? [] });
}

async function run(path, inputJSON, endpoint, optsJSON) {
  const { StateMachine, ExecutionTimeoutError, ExecutionError } = await import('aws-local-stepfunctions');
  const def = load(path);
  const opts = optsJSON ? JSON.parse(optsJSON) : {};
  if (opts.timeoutSeconds !== undefined) def.TimeoutSeconds = opts.timeoutSeconds;
  const tasks = {}, waits = {}, retries = {};
  for (const [name, st] of Object.entries(def.States)) {
    if (st.Type === 'Task') {
      tasks[name] = async (input) => {
        const resp = await fetch(`${endpoint}?state=${encodeURIComponent(name)}`, {
          method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(input),
        });
        const body = await resp.json();
        if (resp.status !== 200) {
          const err = new Error(body.errorMessage ?? `HTTP ${resp.status}`);
          err.name = body.errorType ?? 'Lambda.Unknown';
          throw err;
        }
        return body;
      };
      if (opts.retryMs !== undefined && st.Retry) retries[name] = opts.retryMs;
    }
    if (st.Type === 'Wait' && opts.waitMs !== undefined) waits[name] = opts.waitMs;
  }
  const sm = new StateMachine(def, { validationOptions: { checkArn: true, checkPaths: true } });
  const exec = sm.run(JSON.parse(inputJSON), {
    overrides: { taskResourceLocalHandlers: tasks, waitTimeOverrides: waits, retryIntervalOverrides: retries },
  });
  const states = [], retried = [];
  const logging = (async () => {
    for await (const ev of exec.eventLogs) {
      if (ev.type === 'StateEntered') states.push(ev.state?.name);
      if (ev.type === 'StateRetried') retried.push(ev.state?.name);
    }
  })();
  let res;
  try {
    res = { status: 'SUCCEEDED', output: await exec.result };
  } catch (e) {
    if (e instanceof ExecutionTimeoutError) {
      res = { status: 'TIMED_OUT', error: 'States.Timeout', cause: e.message };
    } else if (e instanceof ExecutionError) {
      res = { status: 'FAILED', error: e.cause?.name ?? 'Error', cause: e.cause?.message ?? e.message };
    } else {
      res = { status: 'FAILED', error: e.name, cause: e.message };
    }
  }
  await Promise.race([logging, new Promise((r) => setTimeout(r, 200))]);
  res.states = states;
  res.retried = retried;
  out(res);
}

const [cmd, ...args] = process.argv.slice(2);
try {
  if (cmd === 'validate' && args.length === 1) await validate(args[0]);
  else if (cmd === 'run' && (args.length === 3 || args.length === 4)) await run(...args);
  else {
    process.stderr.write('usage: node run.mjs validate DEFINITION | run DEFINITION INPUT_JSON ENDPOINT [OPTIONS_JSON]\n');
    process.exit(2);
  }
} catch (e) {
  process.stderr.write(`run.mjs: ${e.stack ?? e}\n`);
  process.exit(1);
}
// Pending timers (an aborted Wait, a task still running at a timeout)
// must not keep the process alive.
process.exit(0);
