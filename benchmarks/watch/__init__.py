"""What `engine.train.watch` costs a loop you wrote."""
