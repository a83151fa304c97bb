"""Unit tests of the IR layer and analyses (parser, printer, builder, types, clone, cfg,
activity, tape, reverse plan)."""
