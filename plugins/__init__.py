"""The built-in detector plugins; afd loads each file like a drop-in."""
