print("demo: coming with the stores")
