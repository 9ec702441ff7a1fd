"""Tests of the sans-IO wire layer (:mod:`rxturn.wire`)."""
