"""The parts of the run store (`engine.train.store.RunStore`), one job per module."""
