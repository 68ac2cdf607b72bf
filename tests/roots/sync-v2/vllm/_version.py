__version__ = version = '0.2.0'
__version_tuple__ = version_tuple = (0, 2, 0)
__commit_id__ = commit_id = 'g2222222bb'
