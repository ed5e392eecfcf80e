"""What `invlab.train.watch` costs a loop you wrote."""
