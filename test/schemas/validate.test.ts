import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  type DecisionEnvelope,
  type DecisionRequest,
  type EventsRequest,
  type ToolsVisibleRequest,
  validateApprovalRequest,
  validateDecisionRequest,
  validateEntityUpsert,
  validateOutcomeRequest,
  validateReconcileRequest,
} from '../../src/schemas/validate.js';
import { WritError } from '../../src/errors.js';
import { loadSchemas, type SchemaFile } from '../../src/schemas/load.js';
import fc from 'fast-check';
import { offboardingBody } from '../helpers/server.js';

type Body = Record<string, any>;

/** The decision body of docs/protocol.md §2, verbatim (the shared test fixture). */
const decisionBody = (): Body => offboardingBody();

function refused(fn: () => void, code: string, path: string): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof WritError, `expected a WritError, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    assert.equal(e.path, path, e.message);
    assert.equal(e.status, 400);
    assert.ok(e.message.length > 0);
    const body = e.toBody();
    assert.equal(body.error.code, code);
    assert.equal(body.error.path, path);
    return true;
  });
}

function decisionRefused(mutate: (b: Body) => void, code: 'ENVELOPE_INVALID' | 'INVALID_REQUEST', path: string): void {
  const b = decisionBody();
  mutate(b);
  refused(() => validateDecisionRequest(b), code, path);
}

function decisionAdmitted(mutate: (b: Body) => void): void {
  const b = decisionBody();
  mutate(b);
  assert.doesNotThrow(() => validateDecisionRequest(b));
}

// --- decision request: valid bodies -------------------------------------------------------------

test('decision: the contract example is valid', () => {
  validateDecisionRequest(decisionBody());
});

test('decision: minimal envelope (only required fields) and execute phase are valid', () => {
  decisionAdmitted((b) => {
    b.phase = 'execute';
    for (const k of ['authoritative_event', 'execute_after', 'evidence_refs', 'supersedes', 'traceparent']) delete b.envelope[k];
  });
});

test('decision: accepted variants of optional fields', () => {
  decisionAdmitted((b) => {
    b.envelope.supersedes = 'OFF-2048:disable-sign-in.v1';
  });
  decisionAdmitted((b) => {
    b.envelope.evidence_refs = [];
  });
  decisionAdmitted((b) => {
    b.envelope.evidence_refs = Array.from({ length: 64 }, (_, i) => `ref-${i}`);
  });
  decisionAdmitted((b) => {
    b.envelope.evidence_refs = ['x'.repeat(256)];
  });
  decisionAdmitted((b) => {
    b.envelope.execute_after = '2026-08-24T10:00:00Z';
  });
  decisionAdmitted((b) => {
    b.envelope.execute_after = '2024-02-29T23:59:59.123456789-05:30';
  });
  decisionAdmitted((b) => {
    b.envelope.execute_after = '2026-08-24T10:00:00-00:00';
  });
  decisionAdmitted((b) => {
    b.envelope.subject = { type: 'Org::HR::Employee', id: '' };
  });
  decisionAdmitted((b) => {
    b.envelope.actor = { type: '_Agent_2', id: 'a b "c" / é' };
  });
  decisionAdmitted((b) => {
    b.envelope.task_id = 't'.repeat(1024);
  });
  decisionAdmitted((b) => {
    b.execution_id = 'a';
  });
  decisionAdmitted((b) => {
    b.execution_id = `A-z_0.9:${'x'.repeat(120)}`;
  });
  decisionAdmitted((b) => {
    b.action.arguments = {};
  });
  decisionAdmitted((b) => {
    b.action.arguments = { nested: { deep: [1, 2, { x: null }] } };
  });
  decisionAdmitted((b) => {
    b.action.tool = 'files/read';
  });
  decisionAdmitted((b) => {
    b.action.server = 's'.repeat(128);
  });
});

// --- decision request: INVALID_REQUEST ----------------------------------------------------------

test('decision: a body that is not an object is INVALID_REQUEST at the root', () => {
  for (const body of [null, [], 'x', 42, true]) refused(() => validateDecisionRequest(body), 'INVALID_REQUEST', '');
});

test('decision: missing top-level fields are INVALID_REQUEST at the missing field', () => {
  decisionRefused(
    (b) => {
      delete b.execution_id;
    },
    'INVALID_REQUEST',
    '/execution_id',
  );
  decisionRefused(
    (b) => {
      delete b.phase;
    },
    'INVALID_REQUEST',
    '/phase',
  );
  decisionRefused(
    (b) => {
      delete b.action;
    },
    'INVALID_REQUEST',
    '/action',
  );
});

test('decision: bad execution ids are INVALID_REQUEST', () => {
  for (const id of ['', 'x'.repeat(129), 'a/b', 'a b', 'é', 'a\nb', 'OFF#1', 'a"b']) {
    decisionRefused(
      (b) => {
        b.execution_id = id;
      },
      'INVALID_REQUEST',
      '/execution_id',
    );
  }
  decisionRefused(
    (b) => {
      b.execution_id = 42;
    },
    'INVALID_REQUEST',
    '/execution_id',
  );
  decisionRefused(
    (b) => {
      b.execution_id = null;
    },
    'INVALID_REQUEST',
    '/execution_id',
  );
});

test('decision: wrong phase is INVALID_REQUEST', () => {
  for (const phase of ['commit', 'PROPOSE', 'Execute', '', 1, null]) {
    decisionRefused(
      (b) => {
        b.phase = phase;
      },
      'INVALID_REQUEST',
      '/phase',
    );
  }
});

test('decision: unknown top-level fields are INVALID_REQUEST at the field', () => {
  decisionRefused(
    (b) => {
      b.approver = { type: 'User', id: 'x' };
    },
    'INVALID_REQUEST',
    '/approver',
  );
  decisionRefused(
    (b) => {
      b['a/b~c'] = 1;
    },
    'INVALID_REQUEST',
    '/a~1b~0c',
  );
});

test('decision: action shape is INVALID_REQUEST', () => {
  decisionRefused(
    (b) => {
      b.action = 'idp/disable_sign_in';
    },
    'INVALID_REQUEST',
    '/action',
  );
  decisionRefused(
    (b) => {
      b.action = null;
    },
    'INVALID_REQUEST',
    '/action',
  );
  decisionRefused(
    (b) => {
      delete b.action.server;
    },
    'INVALID_REQUEST',
    '/action/server',
  );
  decisionRefused(
    (b) => {
      delete b.action.tool;
    },
    'INVALID_REQUEST',
    '/action/tool',
  );
  decisionRefused(
    (b) => {
      delete b.action.arguments;
    },
    'INVALID_REQUEST',
    '/action/arguments',
  );
  decisionRefused(
    (b) => {
      b.action.server = '';
    },
    'INVALID_REQUEST',
    '/action/server',
  );
  decisionRefused(
    (b) => {
      b.action.server = 'a/b';
    },
    'INVALID_REQUEST',
    '/action/server',
  );
  decisionRefused(
    (b) => {
      b.action.server = 's'.repeat(129);
    },
    'INVALID_REQUEST',
    '/action/server',
  );
  decisionRefused(
    (b) => {
      b.action.tool = '';
    },
    'INVALID_REQUEST',
    '/action/tool',
  );
  decisionRefused(
    (b) => {
      b.action.tool = 7;
    },
    'INVALID_REQUEST',
    '/action/tool',
  );
  decisionRefused(
    (b) => {
      b.action.tool = 't'.repeat(129);
    },
    'INVALID_REQUEST',
    '/action/tool',
  );
  decisionRefused(
    (b) => {
      b.action.arguments = [];
    },
    'INVALID_REQUEST',
    '/action/arguments',
  );
  decisionRefused(
    (b) => {
      b.action.arguments = null;
    },
    'INVALID_REQUEST',
    '/action/arguments',
  );
  decisionRefused(
    (b) => {
      b.action.arguments = '{}';
    },
    'INVALID_REQUEST',
    '/action/arguments',
  );
  decisionRefused(
    (b) => {
      b.action.extra = true;
    },
    'INVALID_REQUEST',
    '/action/extra',
  );
});

// --- decision request: ENVELOPE_INVALID ---------------------------------------------------------

test('decision: a missing or non-object envelope is ENVELOPE_INVALID at /envelope', () => {
  decisionRefused(
    (b) => {
      delete b.envelope;
    },
    'ENVELOPE_INVALID',
    '/envelope',
  );
  decisionRefused(
    (b) => {
      b.envelope = null;
    },
    'ENVELOPE_INVALID',
    '/envelope',
  );
  decisionRefused(
    (b) => {
      b.envelope = [];
    },
    'ENVELOPE_INVALID',
    '/envelope',
  );
  decisionRefused(
    (b) => {
      b.envelope = 'OFF-2048';
    },
    'ENVELOPE_INVALID',
    '/envelope',
  );
});

test('decision: each missing required envelope field is ENVELOPE_INVALID at that field', () => {
  for (const k of ['task_id', 'purpose', 'requester', 'actor', 'subject']) {
    decisionRefused(
      (b) => {
        delete b.envelope[k];
      },
      'ENVELOPE_INVALID',
      `/envelope/${k}`,
    );
  }
});

test('decision: unknown envelope fields are ENVELOPE_INVALID', () => {
  decisionRefused(
    (b) => {
      b.envelope.approver = { type: 'User', id: 'hr-5519' };
    },
    'ENVELOPE_INVALID',
    '/envelope/approver',
  );
  decisionRefused(
    (b) => {
      b.envelope.now = '2026-08-24T10:00:00Z';
    },
    'ENVELOPE_INVALID',
    '/envelope/now',
  );
  decisionRefused(
    (b) => {
      b.envelope.Task_id = 'x';
    },
    'ENVELOPE_INVALID',
    '/envelope/Task_id',
  );
});

test('decision: entity uids must be exactly {type, id} with a Cedar type name', () => {
  for (const k of ['requester', 'actor', 'subject']) {
    decisionRefused(
      (b) => {
        b.envelope[k].extra = 1;
      },
      'ENVELOPE_INVALID',
      `/envelope/${k}/extra`,
    );
    decisionRefused(
      (b) => {
        b.envelope[k] = { __entity: { type: 'User', id: 'x' } };
      },
      'ENVELOPE_INVALID',
      `/envelope/${k}/type`,
    );
    decisionRefused(
      (b) => {
        delete b.envelope[k].id;
      },
      'ENVELOPE_INVALID',
      `/envelope/${k}/id`,
    );
    decisionRefused(
      (b) => {
        delete b.envelope[k].type;
      },
      'ENVELOPE_INVALID',
      `/envelope/${k}/type`,
    );
    decisionRefused(
      (b) => {
        b.envelope[k].id = 7721;
      },
      'ENVELOPE_INVALID',
      `/envelope/${k}/id`,
    );
    decisionRefused(
      (b) => {
        b.envelope[k].id = null;
      },
      'ENVELOPE_INVALID',
      `/envelope/${k}/id`,
    );
    decisionRefused(
      (b) => {
        b.envelope[k].id = { id: 'x' };
      },
      'ENVELOPE_INVALID',
      `/envelope/${k}/id`,
    );
    decisionRefused(
      (b) => {
        b.envelope[k] = 'User::"x"';
      },
      'ENVELOPE_INVALID',
      `/envelope/${k}`,
    );
    decisionRefused(
      (b) => {
        b.envelope[k] = null;
      },
      'ENVELOPE_INVALID',
      `/envelope/${k}`,
    );
    decisionRefused(
      (b) => {
        b.envelope[k].id = 'x'.repeat(1025);
      },
      'ENVELOPE_INVALID',
      `/envelope/${k}/id`,
    );
  }
  for (const type of ['1User', 'User::', '::User', 'User:::Admin', 'User:Admin', 'Us er', '', 'User-1', 'Usér', 'User::1x', 'User::"x"', 7]) {
    decisionRefused(
      (b) => {
        b.envelope.actor.type = type;
      },
      'ENVELOPE_INVALID',
      '/envelope/actor/type',
    );
  }
  decisionRefused(
    (b) => {
      b.envelope.subject.type = 'A'.repeat(257);
    },
    'ENVELOPE_INVALID',
    '/envelope/subject/type',
  );
});

test('decision: execute_after must be strict RFC 3339 with an offset and a real date', () => {
  const bad = [
    '2026-02-30T10:00:00Z', // no such day
    '2025-02-29T10:00:00Z', // not a leap year
    '2100-02-29T10:00:00Z', // century, not a leap year
    '2026-04-31T10:00:00Z',
    '2026-13-01T10:00:00Z',
    '2026-00-10T10:00:00Z',
    '2026-08-00T10:00:00Z',
    '2026-08-24T24:00:00Z',
    '2026-08-24T10:60:00Z',
    '2026-08-24T23:59:60Z', // leap second: refused (documented)
    '2026-08-24T10:00:00', // missing offset
    '2026-08-24T17:00:00+0700', // offset without colon
    '2026-08-24T17:00:00+07', // partial offset
    '2026-08-24T17:00:00+24:00',
    '2026-08-24T17:00:00+07:60',
    '2026-08-24 17:00:00Z', // space separator
    '2026-08-24t17:00:00z', // lower case (documented)
    '2026-08-24T17:00:00.Z', // empty fraction
    '2026-08-24', // date only
    '2026-8-24T17:00:00Z',
    '+2026-08-24T17:00:00Z',
    '２０２６-08-24T17:00:00Z', // non-ASCII digits
    ' 2026-08-24T17:00:00Z',
    '2026-08-24T17:00:00Z\n',
    '',
  ];
  for (const ts of bad)
    decisionRefused(
      (b) => {
        b.envelope.execute_after = ts;
      },
      'ENVELOPE_INVALID',
      '/envelope/execute_after',
    );
  for (const v of [1756000000, null, {}, ['2026-08-24T10:00:00Z']]) {
    decisionRefused(
      (b) => {
        b.envelope.execute_after = v;
      },
      'ENVELOPE_INVALID',
      '/envelope/execute_after',
    );
  }
});

test('decision: string fields and limits of the envelope', () => {
  decisionRefused(
    (b) => {
      b.envelope.task_id = '';
    },
    'ENVELOPE_INVALID',
    '/envelope/task_id',
  );
  decisionRefused(
    (b) => {
      b.envelope.task_id = 't'.repeat(1025);
    },
    'ENVELOPE_INVALID',
    '/envelope/task_id',
  );
  decisionRefused(
    (b) => {
      b.envelope.task_id = 2048;
    },
    'ENVELOPE_INVALID',
    '/envelope/task_id',
  );
  decisionRefused(
    (b) => {
      b.envelope.purpose = '';
    },
    'ENVELOPE_INVALID',
    '/envelope/purpose',
  );
  decisionRefused(
    (b) => {
      b.envelope.purpose = ['x'];
    },
    'ENVELOPE_INVALID',
    '/envelope/purpose',
  );
  decisionRefused(
    (b) => {
      b.envelope.purpose = 'p'.repeat(1025);
    },
    'ENVELOPE_INVALID',
    '/envelope/purpose',
  );
  decisionRefused(
    (b) => {
      b.envelope.authoritative_event = '';
    },
    'ENVELOPE_INVALID',
    '/envelope/authoritative_event',
  );
  decisionRefused(
    (b) => {
      b.envelope.authoritative_event = null;
    },
    'ENVELOPE_INVALID',
    '/envelope/authoritative_event',
  );
  decisionRefused(
    (b) => {
      b.envelope.authoritative_event = 'e'.repeat(1025);
    },
    'ENVELOPE_INVALID',
    '/envelope/authoritative_event',
  );
});

test('decision: evidence_refs is an array of at most 64 strings of 1–256 characters', () => {
  decisionRefused(
    (b) => {
      b.envelope.evidence_refs = 'hris:employee:7721';
    },
    'ENVELOPE_INVALID',
    '/envelope/evidence_refs',
  );
  decisionRefused(
    (b) => {
      b.envelope.evidence_refs = null;
    },
    'ENVELOPE_INVALID',
    '/envelope/evidence_refs',
  );
  decisionRefused(
    (b) => {
      b.envelope.evidence_refs = { a: 'x' };
    },
    'ENVELOPE_INVALID',
    '/envelope/evidence_refs',
  );
  decisionRefused(
    (b) => {
      b.envelope.evidence_refs = ['ok', 7];
    },
    'ENVELOPE_INVALID',
    '/envelope/evidence_refs/1',
  );
  decisionRefused(
    (b) => {
      b.envelope.evidence_refs = ['ok', ''];
    },
    'ENVELOPE_INVALID',
    '/envelope/evidence_refs/1',
  );
  decisionRefused(
    (b) => {
      b.envelope.evidence_refs = ['x'.repeat(257)];
    },
    'ENVELOPE_INVALID',
    '/envelope/evidence_refs/0',
  );
  decisionRefused(
    (b) => {
      b.envelope.evidence_refs = [{ ref: 'x' }];
    },
    'ENVELOPE_INVALID',
    '/envelope/evidence_refs/0',
  );
  decisionRefused(
    (b) => {
      b.envelope.evidence_refs = Array.from({ length: 65 }, (_, i) => `r${i}`);
    },
    'ENVELOPE_INVALID',
    '/envelope/evidence_refs',
  );
});

test('decision: supersedes is an execution id or null', () => {
  for (const v of ['', 'a/b', 'x'.repeat(129), 42, { execution_id: 'x' }, false]) {
    decisionRefused(
      (b) => {
        b.envelope.supersedes = v;
      },
      'ENVELOPE_INVALID',
      '/envelope/supersedes',
    );
  }
});

test('decision: traceparent must be a W3C traceparent', () => {
  for (const v of [
    '',
    'not-a-traceparent',
    '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01', // upper case
    '00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01', // short trace id
    'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', // version ff
    '00-00000000000000000000000000000000-00f067aa0ba902b7-01', // zero trace id
    '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01', // zero parent id
    7,
  ]) {
    decisionRefused(
      (b) => {
        b.envelope.traceparent = v;
      },
      'ENVELOPE_INVALID',
      '/envelope/traceparent',
    );
  }
});

test('decision: the first error wins; top-level required fields are checked before the envelope', () => {
  decisionRefused(
    (b) => {
      delete b.execution_id;
      b.envelope.extra = 1;
    },
    'INVALID_REQUEST',
    '/execution_id',
  );
  decisionRefused(
    (b) => {
      b.envelope.extra = 1;
      b.action.extra = 1;
    },
    'ENVELOPE_INVALID',
    '/envelope/extra',
  );
  decisionRefused(
    (b) => {
      b.phase = 'x';
      b.envelope.extra = 1;
    },
    'INVALID_REQUEST',
    '/phase',
  );
});

test('decision: validation does not mutate the body', () => {
  const b = decisionBody();
  const before = JSON.stringify(b);
  validateDecisionRequest(b);
  assert.equal(JSON.stringify(b), before);
});

// --- approvals ----------------------------------------------------------------------------------

const BINDING = `writ-bind/1:sha256:${'ab'.repeat(32)}`;
const DIGEST = `sha256:${'cd'.repeat(32)}`;
function approvalBody(): Body {
  return {
    actor: { type: 'Agent', id: 'offboarding-agent-prod' },
    execution_id: 'OFF-2048:disable-sign-in',
    binding: BINDING,
    envelope_digest: DIGEST,
    expires_at: '2026-08-25T17:00:00+07:00',
  };
}
function approvalRefused(mutate: (b: Body) => void, path: string): void {
  const b = approvalBody();
  mutate(b);
  refused(() => validateApprovalRequest(b), 'INVALID_REQUEST', path);
}

test('approval: valid bodies', () => {
  validateApprovalRequest(approvalBody());
  const b = approvalBody();
  b.expires_at = '2026-08-25T10:00:00.5Z';
  validateApprovalRequest(b);
});

test('approval: invalid bodies are INVALID_REQUEST at the field', () => {
  refused(() => validateApprovalRequest(null), 'INVALID_REQUEST', '');
  for (const k of ['actor', 'execution_id', 'binding', 'envelope_digest', 'expires_at']) {
    approvalRefused((b) => {
      delete b[k];
    }, `/${k}`);
  }
  approvalRefused((b) => {
    b.approver = { type: 'User', id: 'hr-5519' };
  }, '/approver');
  approvalRefused((b) => {
    b.actor.role = 'x';
  }, '/actor/role');
  approvalRefused((b) => {
    b.actor.type = '1Agent';
  }, '/actor/type');
  approvalRefused((b) => {
    b.actor.id = 1;
  }, '/actor/id');
  approvalRefused((b) => {
    b.execution_id = 'a/b';
  }, '/execution_id');
  approvalRefused((b) => {
    b.binding = `sha256:${'ab'.repeat(32)}`;
  }, '/binding');
  approvalRefused((b) => {
    b.binding = BINDING.toUpperCase();
  }, '/binding');
  approvalRefused((b) => {
    b.envelope_digest = 'sha256:xyz';
  }, '/envelope_digest');
  approvalRefused((b) => {
    b.envelope_digest = BINDING;
  }, '/envelope_digest');
  approvalRefused((b) => {
    b.expires_at = '2026-02-30T10:00:00Z';
  }, '/expires_at');
  approvalRefused((b) => {
    b.expires_at = '2026-08-25T10:00:00';
  }, '/expires_at');
  approvalRefused((b) => {
    b.expires_at = 1756000000;
  }, '/expires_at');
});

// --- outcome ------------------------------------------------------------------------------------

test('outcome: valid bodies', () => {
  for (const status of ['committed', 'rejected', 'unknown']) validateOutcomeRequest({ status });
  validateOutcomeRequest({ status: 'committed', confirmation: 'tool_reported' });
  validateOutcomeRequest({
    status: 'committed',
    confirmation: 'system_of_record',
    result_digest: `sha256:${'0'.repeat(64)}`,
    downstream_ref: 'idp:audit:123',
    detail: 'disabled',
  });
  validateOutcomeRequest({ status: 'unknown', detail: '' });
});

test('outcome: invalid bodies are INVALID_REQUEST at the field', () => {
  refused(() => validateOutcomeRequest([]), 'INVALID_REQUEST', '');
  refused(() => validateOutcomeRequest({}), 'INVALID_REQUEST', '/status');
  for (const status of ['ok', 'COMMITTED', 'reconciled', '', null, 1]) {
    refused(() => validateOutcomeRequest({ status }), 'INVALID_REQUEST', '/status');
  }
  refused(() => validateOutcomeRequest({ status: 'committed', confirmation: 'pep' }), 'INVALID_REQUEST', '/confirmation');
  refused(() => validateOutcomeRequest({ status: 'committed', confirmation: null }), 'INVALID_REQUEST', '/confirmation');
  refused(() => validateOutcomeRequest({ status: 'committed', result_digest: 5 }), 'INVALID_REQUEST', '/result_digest');
  refused(() => validateOutcomeRequest({ status: 'committed', result_digest: '' }), 'INVALID_REQUEST', '/result_digest');
  refused(() => validateOutcomeRequest({ status: 'committed', downstream_ref: 'x'.repeat(1025) }), 'INVALID_REQUEST', '/downstream_ref');
  refused(() => validateOutcomeRequest({ status: 'committed', detail: 'x'.repeat(4097) }), 'INVALID_REQUEST', '/detail');
  refused(() => validateOutcomeRequest({ status: 'committed', resolution: 'absent' }), 'INVALID_REQUEST', '/resolution');
});

// --- reconcile ----------------------------------------------------------------------------------

test('reconcile: valid bodies', () => {
  validateReconcileRequest({ resolution: 'committed', evidence_ref: 'idp:audit-log:2026-08-24#991' });
  validateReconcileRequest({ resolution: 'absent', evidence_ref: 'x' });
});

test('reconcile: any other resolution, or a missing evidence_ref, is INVALID_REQUEST', () => {
  for (const resolution of ['could not determine', 'unknown', 'rejected', 'Committed', '', null, true]) {
    refused(() => validateReconcileRequest({ resolution, evidence_ref: 'x' }), 'INVALID_REQUEST', '/resolution');
  }
  refused(() => validateReconcileRequest({ evidence_ref: 'x' }), 'INVALID_REQUEST', '/resolution');
  refused(() => validateReconcileRequest({ resolution: 'absent' }), 'INVALID_REQUEST', '/evidence_ref');
  refused(() => validateReconcileRequest({ resolution: 'absent', evidence_ref: '' }), 'INVALID_REQUEST', '/evidence_ref');
  refused(() => validateReconcileRequest({ resolution: 'absent', evidence_ref: ['x'] }), 'INVALID_REQUEST', '/evidence_ref');
  refused(() => validateReconcileRequest({ resolution: 'absent', evidence_ref: 'x', note: 'y' }), 'INVALID_REQUEST', '/note');
  refused(() => validateReconcileRequest('absent'), 'INVALID_REQUEST', '');
});

// --- entity upsert ------------------------------------------------------------------------------

test('entity upsert: valid bodies', () => {
  validateEntityUpsert({ attrs: {}, parents: [] });
  validateEntityUpsert({
    attrs: { legal_hold: false, level: 3, manager: { __entity: { type: 'User', id: 'manager-1842' } }, tags: ['a'] },
    parents: [
      { type: 'Role', id: 'hr' },
      { type: 'Org::Dept', id: 'finance' },
    ],
  });
});

test('entity upsert: invalid bodies are INVALID_REQUEST at the field', () => {
  refused(() => validateEntityUpsert(null), 'INVALID_REQUEST', '');
  refused(() => validateEntityUpsert({ parents: [] }), 'INVALID_REQUEST', '/attrs');
  refused(() => validateEntityUpsert({ attrs: {} }), 'INVALID_REQUEST', '/parents');
  refused(() => validateEntityUpsert({ attrs: [], parents: [] }), 'INVALID_REQUEST', '/attrs');
  refused(() => validateEntityUpsert({ attrs: null, parents: [] }), 'INVALID_REQUEST', '/attrs');
  refused(() => validateEntityUpsert({ attrs: {}, parents: {} }), 'INVALID_REQUEST', '/parents');
  refused(() => validateEntityUpsert({ attrs: {}, parents: ['Role::"hr"'] }), 'INVALID_REQUEST', '/parents/0');
  refused(
    () =>
      validateEntityUpsert({
        attrs: {},
        parents: [
          { type: 'Role', id: 'hr' },
          { type: 'Role::', id: 'x' },
        ],
      }),
    'INVALID_REQUEST',
    '/parents/1/type',
  );
  refused(() => validateEntityUpsert({ attrs: {}, parents: [{ type: 'Role', id: 'hr', extra: 1 }] }), 'INVALID_REQUEST', '/parents/0/extra');
  refused(() => validateEntityUpsert({ attrs: {}, parents: [{ type: 'Role', id: 1 }] }), 'INVALID_REQUEST', '/parents/0/id');
  refused(() => validateEntityUpsert({ uid: { type: 'User', id: 'x' }, attrs: {}, parents: [] }), 'INVALID_REQUEST', '/uid');
  refused(
    () => validateEntityUpsert({ attrs: {}, parents: Array.from({ length: 1025 }, (_, i) => ({ type: 'R', id: String(i) })) }),
    'INVALID_REQUEST',
    '/parents',
  );
});

// --- generated bodies ---------------------------------------------------------------------------

test('decision: arbitrary JSON never escapes as anything but a WritError with a consistent code and path', () => {
  const validators = [validateDecisionRequest, validateApprovalRequest, validateOutcomeRequest, validateReconcileRequest, validateEntityUpsert];
  const check = (fn: (b: unknown) => void, body: unknown) => {
    try {
      fn(body);
    } catch (e) {
      assert.ok(e instanceof WritError, String(e));
      assert.equal(typeof e.path, 'string');
      assert.ok(e.path === '' || e.path!.startsWith('/'), e.path);
      if (fn === validateDecisionRequest) {
        const underEnvelope = e.path === '/envelope' || e.path!.startsWith('/envelope/');
        assert.equal(e.code, underEnvelope ? 'ENVELOPE_INVALID' : 'INVALID_REQUEST', `${e.code} at ${e.path}`);
      } else {
        assert.equal(e.code, 'INVALID_REQUEST');
      }
    }
  };
  fc.assert(
    fc.property(fc.jsonValue({ maxDepth: 4 }), (v) => {
      for (const fn of validators) check(fn, v);
    }),
    { numRuns: 2000 },
  );
  // Mutations of the valid example: replace one envelope or top-level member with an arbitrary value.
  const keys = [
    'execution_id',
    'phase',
    'action',
    'envelope.task_id',
    'envelope.purpose',
    'envelope.requester',
    'envelope.actor',
    'envelope.subject',
    'envelope.authoritative_event',
    'envelope.execute_after',
    'envelope.evidence_refs',
    'envelope.supersedes',
    'envelope.traceparent',
    'envelope.extra',
  ];
  fc.assert(
    fc.property(fc.constantFrom(...keys), fc.jsonValue({ maxDepth: 3 }), (key, value) => {
      const b = decisionBody();
      const [a, c] = key.split('.') as [string, string | undefined];
      if (c === undefined) b[a] = value;
      else b[a][c] = value;
      check(validateDecisionRequest, b);
    }),
    { numRuns: 3000 },
  );
});

/** Each member of T, marked as the type makes it: 'optional' when it may be absent, else 'required'. */
type Members<T> = { [K in keyof T]-?: undefined extends T[K] ? 'optional' : 'required' };

/** The members a schema file (or one of its nested objects) declares, marked as its `required` makes them. */
function schemaMembers(file: SchemaFile, ...path: string[]): Record<string, 'optional' | 'required'> {
  let schema = loadSchemas().get(file) as { properties: Record<string, unknown>; required?: string[] };
  for (const key of path) schema = schema.properties[key] as typeof schema;
  const required = new Set(schema.required ?? []);
  return Object.fromEntries(Object.keys(schema.properties).map((k) => [k, required.has(k) ? 'required' : 'optional']));
}

test('the types the validators narrow to name exactly the members their schemas declare, required as the schemas require them', () => {
  const envelope: Members<DecisionEnvelope> = {
    task_id: 'required',
    purpose: 'required',
    requester: 'required',
    actor: 'required',
    subject: 'required',
    authoritative_event: 'optional',
    execute_after: 'optional',
    evidence_refs: 'optional',
    supersedes: 'optional',
    traceparent: 'optional',
  };
  assert.deepEqual(schemaMembers('envelope.json'), envelope);
  const decision: Members<DecisionRequest> = {
    execution_id: 'required',
    phase: 'required',
    envelope: 'required',
    identity_token: 'optional',
    action: 'required',
  };
  assert.deepEqual(schemaMembers('decision-request.json'), decision);
  const action: Members<DecisionRequest['action']> = { server: 'required', tool: 'required', arguments: 'required' };
  assert.deepEqual(schemaMembers('decision-request.json', 'action'), action);
  const toolsVisible: Members<ToolsVisibleRequest> = { envelope: 'required', server: 'required', tools: 'required', identity_token: 'optional' };
  assert.deepEqual(schemaMembers('tools-visible-request.json'), toolsVisible);
  const events: Members<EventsRequest> = { events: 'required', identity_token: 'optional' };
  assert.deepEqual(schemaMembers('events-request.json'), events);
});

test('a body the decision validator accepts is read by its typed members, no cast', () => {
  const body: unknown = JSON.parse(JSON.stringify(offboardingBody({ execution_id: 'X-narrow' })));
  validateDecisionRequest(body);
  const { server, tool } = body.action;
  assert.equal(typeof `${body.execution_id}${body.envelope.task_id}${server}${tool}`, 'string');
  assert.ok(body.phase === 'propose' || body.phase === 'execute');
});
