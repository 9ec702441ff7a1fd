"""What a turn leaves behind: its result, its attempt log, the audit trail.

- :mod:`~rxturn.engine.records._results`: :class:`TurnResult`, :class:`RunResult`,
  :class:`Session` and the streamer's text;
- :mod:`~rxturn.engine.records._attempts`: :class:`AttemptLog`, one record per attempt (cost,
  usage, how it ended) as the handler reports them;
- :mod:`~rxturn.engine.records.audit`: :class:`AuditTrail`, :class:`Run`, :class:`Turn` and
  :class:`AttemptRecord`.
"""
