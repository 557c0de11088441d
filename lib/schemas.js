// crw:lib/schemas: ready-made strict schemas for agent.call. Every export is checked against
// the strict structured-output rules when a workflow imports this module, so each one is a
// plain JSON object: every object lists all its properties in required and sets
// additionalProperties to false; a field that may be empty is a nullable union.
//
// The helpers below are not exported: an export that is not a schema would fail the check.

const text = (description) => ({ type: "string", description });
const nullableText = (description) => ({ type: ["string", "null"], description });
const list = (items, description) => ({ type: "array", items, description });
const choice = (values, description) => ({ type: "string", enum: values, description });
const record = (description, properties) => ({
  type: "object",
  description,
  properties,
  required: Object.keys(properties),
  additionalProperties: false,
});

// plan: what an architect proposes before anyone edits anything.
export const plan = record("A plan of work, broken into ordered steps that can each be carried out and checked on their own.", {
  summary: text("What the plan achieves and how, in two or three sentences."),
  steps: Object.assign(
    list(
      record("One step of the plan.", {
        id: text('A short identifier unique within the plan, such as "s1"; later calls refer to the step by it.'),
        title: text("The step in a few words, imperative mood."),
        description: text("What to do and how to tell it is done, precise enough for an engineer who has not seen the discussion."),
        files: list(text("A path relative to the repository root."), "Files the step is expected to create or change; empty when it touches none."),
      }),
      "The steps in the order they should be carried out."
    ),
    { minItems: 1 }
  ),
  risks: list(text("One risk and how to notice it early."), "What could go wrong or is still unknown; empty when nothing stands out."),
});

// buildReport: what an executor says after carrying out a step or a plan.
export const buildReport = record("A report on work carried out: what was done, what changed and how it was checked.", {
  status: choice(["done", "partial", "blocked"], "done: the work is complete; partial: some of it is done and the rest is described in notes; blocked: nothing more can be done without help, and notes say why."),
  summary: text("What was done, in a few sentences."),
  filesChanged: list(text("A path relative to the repository root."), "Every file created, modified or deleted."),
  testsRun: list(
    record("One test or check that was run.", {
      command: text("The command exactly as it was run."),
      passed: { type: "boolean", description: "Whether the command succeeded." },
    }),
    "The tests and checks that were run, in the order they were run; empty when none was."
  ),
  notes: nullableText("What the next person should know: work left over, what blocked it, decisions made along the way; null when there is nothing to add."),
});

// reviewVerdict: a reviewer's judgement of a change.
export const reviewVerdict = record("A code review: the verdict and the findings that support it.", {
  verdict: choice(["approve", "request_changes"], "approve when nothing critical or major remains; request_changes otherwise."),
  summary: text("The overall assessment in a few sentences."),
  findings: list(
    record("One problem or suggestion found in the change.", {
      id: text('A short identifier unique within the review, such as "f1"; a triage refers to the finding by it.'),
      severity: choice(["critical", "major", "minor", "nit"], "critical: wrong results, data loss or a security hole; major: a bug or a missing test that matters; minor: worth fixing but harmless; nit: taste or style."),
      file: nullableText("The path of the file concerned, relative to the repository root; null when the finding is not about one file."),
      line: { type: ["integer", "null"], minimum: 1, description: "The 1-based line the finding is about; null when it is not about one line." },
      title: text("The finding in one line."),
      detail: text("What is wrong and why it matters."),
      suggestion: nullableText("How to fix it; null when there is no specific fix to propose."),
    }),
    "Every finding, most severe first; empty when there is nothing to report."
  ),
});

// decision: a yes/no answer with its grounds.
export const decision = record("A yes or no decision on the question asked, with the reasons for it.", {
  decision: { type: "boolean", description: "true for yes, false for no." },
  reasons: list(text("One reason, in a sentence."), "The reasons for the decision, strongest first."),
  confidence: choice(["low", "medium", "high"], "How sure the decision is: low when it rests on guesses, high when the evidence settles it."),
});

// findingTriage: which review findings to act on.
export const findingTriage = record("A triage of review findings: which to act on and which to set aside.", {
  summary: text("The outcome of the triage in a sentence or two."),
  findings: list(
    record("The triage of one finding.", {
      id: text("The id of the finding, as the review gave it."),
      action: choice(["keep", "drop"], "keep: the finding is valid and should be addressed; drop: it is wrong, a duplicate, or not worth the change."),
      reason: text("Why the finding is kept or dropped."),
    }),
    "One entry for every finding given, in the order given."
  ),
});
