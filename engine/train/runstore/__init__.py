"""The parts of the run store (`invlab.train.store.RunStore`), one job per module."""
